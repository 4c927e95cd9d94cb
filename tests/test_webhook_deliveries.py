"""End-to-end deliveries to a real receiver on 127.0.0.1: every event type's body and
signatures, secret rotation, the test endpoint, waking and stopping the worker."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from aiohttp import web

from service.app import WEBHOOK_RUNTIME, create_app
from service.http.appkeys import DATABASE
from service.settings.options import Settings
from tests.conftest import ENCRYPTION_KEY
from tests.support.api import create_tenant, get_json
from tests.support.keys import key_headers
from tests.support.webhooks import (
    ISO_MS,
    Received,
    Receiver,
    always_unavailable,
    check_signed,
    create_webhook,
    delivery_settings,
    eventually,
    patch,
    verify_service_signature,
    verify_standard_signature,
    wait_status,
)

ALL_EVENTS = [
    "tenant.created", "tenant.updated", "tenant.deleted", "tenant.restored", "tenant.moved",
    "config.updated", "config.deleted",
    "permission.created", "permission.updated", "permission.deleted",
]  # fmt: skip


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


async def test_every_event_type_arrives_with_the_documented_body(client, admin, receiver):
    hook = await create_webhook(client, admin, url=receiver.url, events=ALL_EVENTS)
    secret = hook["secret"]
    assert secret.startswith("whsec_")

    root = await create_tenant(client, admin, name="Root", slug="ev_root")
    other = await create_tenant(client, admin, name="Other", slug="ev_other")
    child = await create_tenant(client, admin, parent_id=root["id"], name="Kid", slug="ev_kid")
    renamed = await patch(client, admin, f"/api/v1/tenants/{root['id']}", {"name": "Root 2"})
    await patch(client, admin, f"/api/v1/tenants/{root['id']}", {"config": {"plan": "pro"}})
    with_config = await get_json(client, f"/api/v1/tenants/{root['id']}", admin)
    await patch(client, admin, f"/api/v1/tenants/{root['id']}", {"config": {"plan": None}})
    without_config = await get_json(client, f"/api/v1/tenants/{root['id']}", admin)
    resp = await client.post(
        f"/api/v1/tenants/{child['id']}/move", json={"new_parent_id": other["id"]}, headers=admin
    )
    moved = await resp.json()
    assert resp.status == 200, moved
    resp = await client.delete(f"/api/v1/tenants/{child['id']}", headers=admin)
    assert resp.status == 204
    archived = await get_json(client, f"/api/v1/tenants/{child['id']}?include_archived=true", admin)
    resp = await client.post(f"/api/v1/tenants/{child['id']}/restore", headers=admin)
    assert resp.status == 200
    base = f"/api/v1/tenants/{root['id']}"
    for method, path, body, status in (
        ("PUT", "/config/api_token", {"value": "s3cret-value", "sensitive": True}, 201),
        ("PUT", "/permissions/billing.view", {"value": True}, 201),
        ("PUT", "/permissions/billing.view", {"value": False, "mode": "LOCKED"}, 200),
        ("DELETE", "/permissions/billing.view", None, 204),
    ):
        resp = await client.request(method, base + path, json=body, headers=admin)
        assert resp.status == status, await resp.text()
    permission = {"tenant_id": root["id"], "key": "billing.view", "value": True, "mode": "INHERIT"}

    def created(t: dict[str, Any]) -> dict[str, Any]:
        fields = ("id", "name", "slug", "parent_id", "isolation_strategy", "ancestry_path", "depth")
        return {f: t[f] for f in fields}

    expected = [
        ("tenant.created", created(root)),
        ("tenant.created", created(other)),
        ("tenant.created", created(child)),
        ("tenant.updated", {**renamed, "changed_fields": ["name"]}),
        ("tenant.updated", {**with_config, "changed_fields": ["config"]}),
        ("config.updated", {"tenant_id": root["id"], "key": "plan", "value": "pro",
                            "locked": False, "sensitive": False}),
        ("tenant.updated", {**without_config, "changed_fields": ["config"]}),
        ("config.deleted", {"tenant_id": root["id"], "key": "plan"}),
        ("tenant.moved", {"id": child["id"], "slug": "ev_kid", "old_parent_id": root["id"],
                          "new_parent_id": other["id"], "old_ancestry_path": child["ancestry_path"],
                          "new_ancestry_path": moved["ancestry_path"], "descendants_moved": 0}),
        ("tenant.deleted", {"id": child["id"], "slug": "ev_kid", "parent_id": other["id"],
                            "deleted_at": archived["deleted_at"]}),
        ("tenant.restored", {"id": child["id"], "slug": "ev_kid", "parent_id": other["id"]}),
        ("config.updated", {"tenant_id": root["id"], "key": "api_token", "value": "***",
                            "locked": False, "sensitive": True}),
        ("permission.created", permission),
        ("permission.updated", {**permission, "value": False, "mode": "LOCKED"}),
        ("permission.deleted", {"tenant_id": root["id"], "key": "billing.view"}),
    ]  # fmt: skip

    async def all_arrived() -> bool:
        return len(receiver.requests) >= len(expected)

    await eventually(all_arrived)
    got = sorted(receiver.requests, key=lambda r: r.delivery_id)  # delivery ids are UUIDv7
    assert len(got) == len(expected)
    events = {
        r["id"]: r
        for r in await client.app[DATABASE].pool.fetch("SELECT id, created_at FROM events")
    }
    bodies = [(r.json["event"], r.json["data"]) for r in got]
    assert sorted(bodies, key=repr) == sorted(expected, key=repr)
    assert all(b"s3cret-value" not in r.body for r in got)  # sensitive values stay masked
    for received in got:
        check_signed(secret, received)
        body = received.json
        assert set(body) == {"event_id", "event", "timestamp", "data"}
        assert ISO_MS.match(body["timestamp"])
    # Each body names its own event (the outbox row), one event per delivery here.
    assert sorted(UUID(r.json["event_id"]) for r in got) == sorted(events)
    assert len(events) == len(expected)
    done = {"total": len(expected), "pending": 0, "success": len(expected), "failed": 0}

    async def all_recorded() -> bool:
        return await get_json(client, "/api/v1/webhooks/deliveries/stats", admin) == done

    await eventually(all_recorded)


async def test_rotation_signs_with_both_secrets_for_a_day(client, admin, receiver):
    old_secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.created"], secret=old_secret
    )
    assert hook["secret"] == old_secret
    resp = await client.post(f"/api/v1/webhooks/{hook['id']}/rotate-secret", headers=admin)
    rotated = await resp.json()
    assert resp.status == 200, rotated
    new_secret = rotated["secret"]
    assert new_secret != old_secret
    fresh = ("secret", "standard_webhooks_secret", "updated_at")
    assert rotated["standard_webhooks_secret"] == new_secret
    assert {k: v for k, v in rotated.items() if k not in fresh} == {
        k: v for k, v in hook.items() if k not in fresh
    }
    await create_tenant(client, admin)

    async def arrived() -> bool:
        return len(receiver.requests) == 1

    await eventually(arrived)
    received = receiver.requests[0]
    assert verify_service_signature(new_secret, received)
    assert not verify_service_signature(old_secret, received)
    assert len(received.headers["webhook-signature"].split(" ")) == 2
    verify_standard_signature(new_secret, received)
    verify_standard_signature(old_secret, received)
    # Neither secret is ever shown again.
    shown = await get_json(client, f"/api/v1/webhooks/{hook['id']}", admin)
    assert "secret" not in shown


async def test_the_test_endpoint_reports_the_answer(
    client, admin, receiver, unused_tcp_port, db_conn
):
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    path = f"/api/v1/webhooks/{hook['id']}/test"

    resp = await client.post(path, headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["success"] is True
    assert body["response_code"] == 200
    assert "error" not in body
    assert body["duration_ms"] >= 0
    sent = receiver.requests[-1]
    check_signed(hook["secret"], sent)
    assert sent.json["event"] == "webhook.test"
    assert UUID(sent.json["event_id"]) != UUID(sent.delivery_id)
    assert sent.json["data"] == {"webhook_id": hook["id"]}
    assert ISO_MS.match(sent.json["timestamp"])

    receiver.behaviour = always_unavailable
    body = await (await client.post(path, headers=admin)).json()
    assert (body["success"], body["response_code"], body["error"]) == (False, 503, "HTTP 503")

    async def server_error(received: Received, seen: int) -> int:
        return 500

    receiver.behaviour = server_error
    body = await (await client.post(path, headers=admin)).json()
    assert (body["success"], body["response_code"], body["error"]) == (False, 500, "HTTP 500")

    unreachable = f"http://127.0.0.1:{unused_tcp_port}/hook"
    await patch(client, admin, f"/api/v1/webhooks/{hook['id']}", {"url": unreachable})
    resp = await client.post(path, headers=admin)
    body = await resp.json()
    assert resp.status == 200
    assert body["success"] is False
    assert body["response_code"] == 0
    assert body["error"].startswith("connection failed")
    assert len(receiver.requests) == 3  # nothing was delivered for these tests
    audit = await db_conn.fetch(
        "SELECT changes FROM audit_logs WHERE action = 'webhook.tested' AND resource_id = $1 "
        "ORDER BY id",
        hook["id"],
    )
    assert [a["changes"]["result"]["response_code"] for a in audit] == [200, 503, 500, 0]
    assert audit[0]["changes"] == {"result": {"success": True, "response_code": 200}}


async def test_a_cancelled_attempt_gives_its_claim_back(client, admin, receiver):
    """What stop() does to an attempt still running after the grace period."""
    answer = asyncio.Event()

    async def hang_first(received: Received, seen: int) -> int:
        if seen == 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(answer.wait(), 1.5)
        return 200

    receiver.behaviour = hang_first
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    await create_tenant(client, admin)

    async def in_flight() -> bool:
        return len(receiver.requests) == 1

    await eventually(in_flight)
    worker = client.app[WEBHOOK_RUNTIME].worker
    assert worker is not None
    assert worker.in_flight == 1
    [task] = list(worker._inflight)
    capacity, worker.concurrency = worker.concurrency, 0  # claim nothing meanwhile
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    row = await client.app[DATABASE].pool.fetchrow(
        "SELECT status, attempts, leased_by, next_attempt_at <= now() AS due "
        "FROM webhook_deliveries"
    )
    # Released at once (its lease would otherwise hold it for 2 x timeout + 5 s).
    assert dict(row) == {"status": "pending", "attempts": 0, "leased_by": None, "due": True}
    worker.concurrency = capacity
    worker.wake()
    answer.set()
    delivered = await wait_status(client, admin, hook["id"], "success")
    assert delivered["attempts"] == 1  # the released attempt was not counted
    assert [r.delivery_id for r in receiver.requests] == [delivered["id"]] * 2


async def test_a_notification_wakes_an_idle_worker(settings, aiohttp_client, receiver):
    app = create_app(settings)
    worker = app[WEBHOOK_RUNTIME].worker
    assert worker is not None
    worker.poll_seconds = 3600  # it would never poll during this test
    client = await aiohttp_client(app)
    admin = await key_headers(client.app)
    await asyncio.sleep(0.2)  # the worker found nothing due and went to sleep
    await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    await create_tenant(client, admin)

    async def arrived() -> bool:
        return len(receiver.requests) == 1

    await eventually(arrived)


async def test_polling_delivers_without_notifications(settings, aiohttp_client, receiver):
    app = create_app(settings)
    worker = app[WEBHOOK_RUNTIME].worker
    assert worker is not None
    worker.poll_seconds = 0.2
    worker._listen_after = float("inf")  # never LISTENs: as if the connection were down
    client = await aiohttp_client(app)
    admin = await key_headers(client.app)
    await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    await create_tenant(client, admin)

    async def arrived() -> bool:
        return len(receiver.requests) == 1

    await eventually(arrived)
    assert worker._listener is None


async def test_deliveries_sign_after_an_encryption_key_rotation(client, admin, receiver, db_conn):
    secret = "whsec_" + base64.b64encode(bytes(range(100, 132))).decode()
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.created"], secret=secret
    )
    before = await db_conn.fetchval("SELECT encrypted_secret FROM webhooks")
    new_key = base64.b64encode(os.urandom(32)).decode()
    resp = await client.post(
        "/api/v1/maintenance/rotate-encryption-key",
        json={"old_key": ENCRYPTION_KEY, "new_key": new_key},
        headers=admin,
    )
    body = await resp.json()
    assert resp.status == 200, body
    assert body["webhooks_rotated"] == 1
    assert await db_conn.fetchval("SELECT encrypted_secret FROM webhooks") != before
    await create_tenant(client, admin)

    async def arrived() -> bool:
        return len(receiver.requests) == 1

    await eventually(arrived)
    check_signed(secret, receiver.requests[0])  # opened with the new key at attempt time
    assert hook["secret"] == secret
