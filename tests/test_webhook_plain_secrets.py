"""A secret of the caller's choosing, any text (here no `whsec_` form): accepted on create,
PATCH and rotate-secret, answered with its Standard Webhooks form; X-Service-Signature is
the HMAC-SHA256 of the body keyed with its UTF-8 bytes (recomputed here by hand), and the
official library verifies `webhook-signature` with the answered form as is. The test
endpoint, a tenant's export and the encryption-key rotation work with such secrets."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from standardwebhooks import Webhook

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import ENCRYPTION_KEY
from tests.support.api import create_tenant
from tests.support.webhooks import (
    Received,
    Receiver,
    create_webhook,
    delivery_settings,
    eventually,
    patch,
)

CHOSEN = "my-shared-secret-2026"
PATCHED = "another shared secret, with spaces & ümlauts"
ROTATED = "rotated-plain-secret"


def standard_form(secret: str) -> str:
    return "whsec_" + base64.b64encode(secret.encode()).decode()


def service_signature_of(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path) -> Settings:
    return delivery_settings(fresh_db_url, tmp_path)


@pytest.fixture
def app(settings: Settings) -> web.Application:
    return create_app(settings)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    server = await Receiver().start()
    yield server
    await server.close()


async def next_request(receiver: Receiver, count: int) -> Received:
    async def arrived() -> bool:
        return len(receiver.requests) >= count

    await eventually(arrived)
    return receiver.requests[count - 1]


def check(received: Received, secret: str, *standard: str) -> None:
    assert received.headers["X-Service-Signature"] == service_signature_of(secret, received.body)
    for form in standard:  # each form verifies on its own
        Webhook(form).verify(received.body, received.headers)


async def test_a_plain_secret_round_trips_and_signs_both_headers(client, admin, receiver) -> None:
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.created"], secret=CHOSEN
    )
    assert (hook["secret"], hook["standard_webhooks_secret"]) == (CHOSEN, standard_form(CHOSEN))
    await create_tenant(client, admin)
    check(await next_request(receiver, 1), CHOSEN, hook["standard_webhooks_secret"])

    # PATCH: replaced at once (the answer never shows a secret)
    patched = await patch(client, admin, f"/api/v1/webhooks/{hook['id']}", {"secret": PATCHED})
    assert "secret" not in patched
    assert "standard_webhooks_secret" not in patched
    await create_tenant(client, admin)
    received = await next_request(receiver, 2)
    check(received, PATCHED, standard_form(PATCHED))
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(standard_form(CHOSEN)).verify(received.body, received.headers)

    # rotate-secret with a chosen plain secret: the new one signs X-Service-Signature,
    # both sign webhook-signature during the overlap
    resp = await client.post(
        f"/api/v1/webhooks/{hook['id']}/rotate-secret", json={"secret": ROTATED}, headers=admin
    )
    rotated = await resp.json()
    assert resp.status == 200, rotated
    assert (rotated["secret"], rotated["standard_webhooks_secret"]) == (
        ROTATED,
        standard_form(ROTATED),
    )
    # the test endpoint signs the same way
    resp = await client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=admin)
    result = await resp.json()
    assert (resp.status, result["success"], result["response_code"]) == (200, True, 200)
    sent = await next_request(receiver, 3)
    assert sent.json["event"] == "webhook.test"
    check(sent, ROTATED, standard_form(ROTATED), standard_form(PATCHED))


async def test_export_and_encryption_key_rotation_with_a_plain_secret(
    client, admin, receiver
) -> None:
    tenant = await create_tenant(client, admin)
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.updated"], secret=CHOSEN,
        tenant_id=tenant["id"],
    )  # fmt: skip
    resp = await client.get(f"/api/v1/tenants/{tenant['id']}/export", headers=admin)
    assert resp.status == 200
    text = await resp.text()
    exported: dict[str, Any] = await resp.json(content_type=None)
    assert [w["id"] for w in exported["webhooks"]] == [hook["id"]]
    assert CHOSEN not in text
    assert standard_form(CHOSEN) not in text

    new_key = base64.b64encode(os.urandom(32)).decode()
    resp = await client.post(
        "/api/v1/maintenance/rotate-encryption-key",
        json={"old_key": ENCRYPTION_KEY, "new_key": new_key},
        headers=admin,
    )
    assert (resp.status, await resp.json()) == (
        200,
        {"config_entries_rotated": 0, "webhooks_rotated": 1},
    )
    # the secret still opens and signs as the caller chose it
    await patch(client, admin, f"/api/v1/tenants/{tenant['id']}", {"name": "Renamed"})
    check(await next_request(receiver, 1), CHOSEN, standard_form(CHOSEN))
