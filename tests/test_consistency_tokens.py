"""X-Consistency-Token is tagged with a key of the deployment's secret: a token another
process of the deployment issued is honoured, a made-up one (a far-future position that
would pin the caller's reads to the primary) is refused with 400."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from service.app import create_app
from service.db.consistency import decode_token, encode_token, token_key
from service.http.openapi.components import PARAMETERS
from service.settings.options import Settings
from tests.conftest import HMAC_SECRET, base_env
from tests.support.api import create_tenant

TOKEN = "X-Consistency-Token"


def refusal(body: dict[str, Any]) -> dict[str, Any]:
    error = dict(body["error"])
    error.pop("request_id")
    return error


async def test_a_forged_token_is_refused(client: TestClient, admin: dict[str, str]) -> None:
    tenant = await create_tenant(client, admin)
    path = f"/api/v1/tenants/{tenant['id']}"
    far = (2**62).to_bytes(8, "big")
    for forged in (
        # the first form (no tag), as any client could make it
        base64.urlsafe_b64encode(b"\x01" + far).decode().rstrip("="),
        base64.urlsafe_b64encode(b"\x02" + far).decode().rstrip("="),
        encode_token(2**62, token_key(b"not the deployment's secret")),
    ):
        resp = await client.get(path, headers=admin | {TOKEN: forged})
        assert resp.status == 400
        assert refusal(await resp.json()) == {
            "code": "VALIDATION_ERROR",
            "message": "X-Consistency-Token is not a token this service issued",
            "details": [{"field": "X-Consistency-Token", "message": "invalid token"}],
        }


async def test_a_token_works_across_processes(
    client: TestClient, admin: dict[str, str], aiohttp_client: Any, db_url: str, tmp_path: Path
) -> None:
    other = await aiohttp_client(create_app(Settings.from_env(base_env(db_url, tmp_path))))
    tenant = await create_tenant(client, admin)
    resp = await client.patch(
        f"/api/v1/tenants/{tenant['id']}", json={"name": "Renamed"}, headers=admin
    )
    assert resp.status == 200
    token = resp.headers[TOKEN]
    # the form the OpenAPI document describes
    assert re.fullmatch(PARAMETERS[TOKEN]["schema"]["pattern"], token)
    position = decode_token(token, token_key(HMAC_SECRET.encode()))
    assert position > 0
    # the other process (same secret) accepts it and reads the write
    resp = await other.get(f"/api/v1/tenants/{tenant['id']}", headers=admin | {TOKEN: token})
    assert resp.status == 200
    assert (await resp.json())["name"] == "Renamed"
