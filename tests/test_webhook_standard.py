"""Every secret verifies with the official Standard Webhooks library used the normal way
(`Webhook(standard_webhooks_secret).verify(body, headers)`), and a `whsec_` secret is its
own Standard form; X-Service-Signature is keyed with the secret's text whatever it is;
secrets stored before keep signing as before; every body names its event, the same on
every attempt."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import UUID

import pytest
from aiohttp import web
from standardwebhooks import Webhook

from service.app import create_app
from service.http.appkeys import DATABASE, DEPS
from service.settings.options import Settings
from service.webhooks.envelope import seal_secret
from service.webhooks.signing import (
    InvalidSecret,
    check_secret,
    generate_secret,
    signed_headers,
    standard_webhooks_secret,
)
from tests.support.api import create_tenant
from tests.support.webhooks import (
    Receiver,
    always_ok,
    create_webhook,
    delivery_settings,
    eventually,
    fail_twice,
    verify_service_signature,
    wait_status,
)


def whsec(key: bytes) -> str:
    return "whsec_" + base64.b64encode(key).decode()


# Keys whose base64 holds `+` and `/` (the characters base64url would spell `-` and `_`).
PLUS_SLASH = bytes([0xFB, 0xFF, 0xBF] * 10)
ACCEPTED = [
    whsec(PLUS_SLASH),
    whsec(bytes(range(24))),
    whsec(bytes(range(64))),
    # Random: named by an id, so every pytest-xdist worker collects the same test names.
    pytest.param(whsec(os.urandom(33)), id="random-33-bytes"),
]
# Texts that are not the Standard form: the library gets them as standard_webhooks_secret.
PLAIN = [
    "my-shared-secret-2026",
    "a",
    "x" * 1024,
    "pässwörd with spaces and ümlauts \u2603",
    "whsec_",  # the prefix alone: no key after it
    "whsec_!!! not base64",
    "WHSEC_" + base64.b64encode(bytes(32)).decode(),
]


def _signed(secret: str, body: bytes) -> dict[str, str]:
    return signed_headers(
        secret=secret,
        previous_secret=None,
        delivery_id="01939d4e-0000-7000-8000-000000000001",
        event_type="tenant.created",
        timestamp=int(time.time()),
        body=body,
    )


@pytest.mark.parametrize("secret", [*ACCEPTED, pytest.param(generate_secret(), id="generated")])
def test_whsec_secrets_are_their_own_standard_form(secret: str) -> None:
    check_secret(secret)
    assert standard_webhooks_secret(secret) == secret
    body = b'{"event":"tenant.created"}'
    headers = _signed(secret, body)
    assert Webhook(secret).verify(body, headers) == {"event": "tenant.created"}


@pytest.mark.parametrize("secret", PLAIN)
def test_plain_secrets_key_both_headers_with_their_bytes(secret: str) -> None:
    check_secret(secret)
    body = b'{"event":"tenant.created"}'
    headers = _signed(secret, body)
    standard = standard_webhooks_secret(secret)
    assert standard == whsec(secret.encode())
    assert Webhook(standard).verify(body, headers) == {"event": "tenant.created"}
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Service-Signature"] == f"sha256={expected}"


@pytest.mark.parametrize("secret", ["", "x" * 1025])
def test_secrets_outside_the_lengths_are_refused(secret: str) -> None:
    with pytest.raises(InvalidSecret, match="1 to 1024 characters"):
        check_secret(secret)


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


async def test_secrets_outside_the_lengths_are_400_naming_them(client, admin) -> None:
    for secret in ("", "x" * 1025):
        resp = await client.post(
            "/api/v1/webhooks",
            json={"url": "http://127.0.0.1:9/hook", "events": ["tenant.created"], "secret": secret},
            headers=admin,
        )
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (400, "VALIDATION_ERROR")
        assert body["error"]["details"][0]["field"] == "secret"


@pytest.mark.parametrize("chosen", [None, whsec(PLUS_SLASH)])
async def test_real_deliveries_verify_with_the_library_and_name_their_event(
    client, admin, receiver, chosen: str | None
) -> None:
    receiver.behaviour = fail_twice
    extra = {} if chosen is None else {"secret": chosen}
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"], **extra)
    secret = hook["secret"]
    assert chosen in (None, secret)
    assert hook["standard_webhooks_secret"] == secret  # a whsec_ secret is its own form
    tenant = await create_tenant(client, admin)
    delivery = await wait_status(client, admin, hook["id"], "success")
    attempts = receiver.for_delivery(delivery["id"])
    assert [r.status for r in attempts] == [500, 500, 200]
    [event_id] = await client.app[DATABASE].pool.fetch("SELECT id FROM events")
    for received in attempts:
        payload = Webhook(secret).verify(received.body, received.headers)
        assert payload["event_id"] == str(event_id["id"])  # the same on every retry
        assert payload["data"]["id"] == tenant["id"]
        assert verify_service_signature(secret, received)

    rotated = await client.post(f"/api/v1/webhooks/{hook['id']}/rotate-secret", headers=admin)
    new_secret = (await rotated.json())["secret"]
    assert (await rotated.json())["standard_webhooks_secret"] == new_secret
    receiver.behaviour = always_ok
    resp = await client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=admin)
    assert (await resp.json())["success"] is True
    sent = receiver.requests[-1]
    for key in (new_secret, secret):  # both sign during the overlap
        assert Webhook(key).verify(sent.body, sent.headers)["event"] == "webhook.test"
    UUID(sent.json["event_id"])


async def test_a_plain_secret_stored_before_the_rule_keeps_signing_as_before(
    client, admin, receiver
) -> None:
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    legacy = "an-older-plain-secret-0123456789"
    sealed = seal_secret(client.app[DEPS].keyring.encryptor, UUID(hook["id"]), legacy)
    await client.app[DATABASE].pool.execute(
        "UPDATE webhooks SET encrypted_secret = $1 WHERE id = $2", sealed, UUID(hook["id"])
    )
    await create_tenant(client, admin)

    async def arrived() -> bool:
        return len(receiver.requests) == 1

    await eventually(arrived)
    received = receiver.requests[0]
    assert verify_service_signature(legacy, received)  # keyed with the text, as always
    # Its Standard key is the text's bytes, which the library takes in the whsec_ form.
    Webhook(whsec(legacy.encode())).verify(received.body, received.headers)
