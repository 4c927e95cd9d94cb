"""HTTP helpers for the API-key and role endpoints."""

from __future__ import annotations

import secrets
from typing import Any

from aiohttp.test_utils import TestClient


async def call(
    client: TestClient,
    method: str,
    path: str,
    headers: dict[str, str],
    json: Any = None,
    **kw: Any,
) -> tuple[int, Any]:
    resp = await client.request(method, path, headers=headers, json=json, **kw)
    body = await resp.json() if resp.content_type == "application/json" else None
    return resp.status, body


async def create_key(
    client: TestClient, headers: dict[str, str], *, expect: int = 201, **body: Any
) -> dict[str, Any]:
    body.setdefault("name", "key")
    status, data = await call(client, "POST", "/api/v1/api-keys", headers, body)
    assert status == expect, data
    result: dict[str, Any] = data
    return result


async def create_role(
    client: TestClient, headers: dict[str, str], *, expect: int = 201, **body: Any
) -> dict[str, Any]:
    body.setdefault("name", f"role-{secrets.token_hex(4)}")
    body.setdefault("scopes", ["read"])
    status, data = await call(client, "POST", "/api/v1/roles", headers, body)
    assert status == expect, data
    result: dict[str, Any] = data
    return result


def as_key(created: dict[str, Any]) -> dict[str, str]:
    return {"X-API-Key": created["plaintext_key"]}


def error_code(body: Any) -> str:
    code: str = body["error"]["code"]
    return code
