"""Every secret the API hands out verifies with the official Standard Webhooks library
used the normal way (`Webhook(secret).verify(body, headers)`); secrets it could not
verify are refused with a message that names the form; secrets stored before that rule
keep signing as before; every body names its event, the same on every attempt."""

from __future__ import annotations

import base64
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import UUID

import pytest
from aiohttp import web
from standardwebhooks import Webhook

from service.app import create_app
from service.http.appkeys import DATABASE, DEPS
from service.settings import Settings
from service.webhooks.envelope import seal_secret
from service.webhooks.signing import (
    SECRET_PATTERN,
    InvalidSecret,
    check_secret,
    generate_secret,
    signed_headers,
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
    whsec(os.urandom(33)),
]
REFUSED = [
    "a-caller-chosen-secret-0123456789",  # plain text: the library would base64-decode it
    "whsec_" + base64.urlsafe_b64encode(PLUS_SLASH).decode(),  # `-` and `_`: dropped by it
    whsec(bytes(range(32))).rstrip("="),  # no padding: the library raises
    whsec(bytes(23)),  # too short a key
    whsec(bytes(65)),  # too long
    "whsec_" + "!" * 40,
    "WHSEC_" + base64.b64encode(bytes(32)).decode(),
]


@pytest.mark.parametrize("secret", [*ACCEPTED, generate_secret()])
def test_accepted_secrets_verify_with_the_library(secret: str) -> None:
    check_secret(secret)
    assert re.match(SECRET_PATTERN, secret)
    body = b'{"event":"tenant.created"}'
    headers = signed_headers(
        secret=secret,
        previous_secret=None,
        delivery_id="01939d4e-0000-7000-8000-000000000001",
        event_type="tenant.created",
        timestamp=int(time.time()),
        body=body,
    )
    assert Webhook(secret).verify(body, headers) == {"event": "tenant.created"}


@pytest.mark.parametrize("secret", REFUSED)
def test_secrets_the_library_cannot_use_are_refused(secret: str) -> None:
    with pytest.raises(InvalidSecret, match="Standard Webhooks form"):
        check_secret(secret)
    if len(base64.b64decode(secret[6:] + "==", validate=False)) in range(24, 65):
        assert not re.match(SECRET_PATTERN, secret)  # the pattern refuses the form


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


async def test_a_plain_text_secret_is_refused_with_the_form_named(client, admin) -> None:
    resp = await client.post(
        "/api/v1/webhooks",
        json={
            "url": "http://127.0.0.1:9/hook",
            "events": ["tenant.created"],
            "secret": "a-caller-chosen-secret-0123456789",
        },
        headers=admin,
    )
    body = await resp.json()
    assert resp.status == 400
    message = (
        "must be whsec_ followed by standard base64 (A-Z a-z 0-9 + /, padded with =) of 24 "
        "to 64 bytes, the Standard Webhooks form; leave it out to have one generated"
    )
    assert body["error"]["details"] == [{"field": "secret", "message": message}]


@pytest.mark.parametrize("chosen", [None, whsec(PLUS_SLASH)])
async def test_real_deliveries_verify_with_the_library_and_name_their_event(
    client, admin, receiver, chosen: str | None
) -> None:
    receiver.behaviour = fail_twice
    extra = {} if chosen is None else {"secret": chosen}
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"], **extra)
    secret = hook["secret"]
    assert chosen in (None, secret)
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
