"""End-to-end deliveries to a real receiver on 127.0.0.1: bodies, signatures, retries,
dead letters, retry-all and the test endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from service.app import create_app
from service.config import Settings
from service.http.appkeys import DATABASE, DEPS, WEBHOOK_RUNTIME
from service.usecases.recording import Event
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json
from tests.support.keys import key_headers
from tests.support.webhooks import (
    Received,
    Receiver,
    eventually,
    verify_service_signature,
    verify_standard_signature,
)

ALL_EVENTS = [
    "tenant.created", "tenant.updated", "tenant.deleted", "tenant.restored", "tenant.moved",
    "config.updated", "config.deleted",
    "permission.created", "permission.updated", "permission.deleted",
]  # fmt: skip
ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(
            fresh_db_url,
            tmp_path,
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_RETRY_BASE_SECONDS="0.5",
            WEBHOOK_MAX_ATTEMPTS="3",
            WEBHOOK_TIMEOUT_SECONDS="2",
        )
    )


@pytest.fixture
def app(settings: Settings) -> web.Application:
    return create_app(settings)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    server = await Receiver().start()
    yield server
    await server.close()


async def create_webhook(client: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    resp = await client.post("/api/v1/webhooks", json=body, headers=headers)
    data: dict[str, Any] = await resp.json()
    assert resp.status == 201, data
    return data


async def patch(client: Any, headers: dict[str, str], path: str, body: Any) -> Any:
    resp = await client.patch(path, json=body, headers=headers)
    data = await resp.json()
    assert resp.status == 200, data
    return data


def check_signed(secret: str, received: Received) -> None:
    assert verify_service_signature(secret, received)
    verify_standard_signature(secret, received)  # raises when no signature matches
    assert received.headers["webhook-id"] == received.delivery_id
    assert received.headers["X-Service-Event"] == received.json["event"]
    assert received.headers["Content-Type"] == "application/json"


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
    # Permission endpoints belong to another issue; their events take the one path every
    # event takes, ChangeRecorder.emit, so the fan-out and the body are proven here.
    deps = client.app[DEPS]
    permission = {"tenant_id": root["id"], "key": "billing.view", "value": True, "mode": "INHERIT"}
    async with client.app[DATABASE].connection() as conn, conn.transaction():
        await deps.recorder.emit(
            conn,
            [
                Event("permission.created", root["id"], permission),
                Event("permission.updated", root["id"], {**permission, "value": False}),
                Event("permission.deleted", root["id"], {"tenant_id": root["id"],
                                                          "key": "billing.view"}),
            ],
        )  # fmt: skip

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
        ("permission.created", permission),
        ("permission.updated", {**permission, "value": False}),
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
    for received in got:
        check_signed(secret, received)
        body = received.json
        assert set(body) == {"event", "timestamp", "data"}
        assert ISO_MS.match(body["timestamp"])
    assert len(events) == len(expected)
    done = {"total": len(expected), "pending": 0, "success": len(expected), "failed": 0}

    async def all_recorded() -> bool:
        return await get_json(client, "/api/v1/webhooks/deliveries/stats", admin) == done

    await eventually(all_recorded)


async def fail_twice(received: Received, seen: int) -> int:
    return 500 if seen < 2 else 200


async def always_unavailable(received: Received, seen: int) -> int:
    return 503


async def deliveries_of(client: Any, headers: dict[str, str], hook_id: str) -> list[Any]:
    page = await get_json(client, f"/api/v1/webhooks/{hook_id}/deliveries", headers)
    return list(page["data"])


async def wait_status(client: Any, headers: dict[str, str], hook_id: str, status: str) -> Any:
    async def reached() -> Any:
        rows = await deliveries_of(client, headers, hook_id)
        return rows[0] if rows and rows[0]["status"] == status else None

    return await eventually(reached)


async def test_retries_back_off_with_growing_gaps_and_keep_the_delivery_id(client, admin, receiver):
    receiver.behaviour = fail_twice
    tenant = await create_tenant(client, admin)
    hook = await create_webhook(
        client, admin, url=receiver.url, events=["tenant.updated"], tenant_id=tenant["id"]
    )
    await patch(client, admin, f"/api/v1/tenants/{tenant['id']}", {"name": "Renamed"})

    delivery = await wait_status(client, admin, hook["id"], "success")
    attempts = receiver.for_delivery(delivery["id"])
    assert [r.status for r in attempts] == [500, 500, 200]
    assert len({r.delivery_id for r in attempts}) == 1
    assert len({r.body for r in attempts}) == 1  # the same event body on every attempt
    for received in attempts:
        check_signed(hook["secret"], received)
    first_gap = attempts[1].started - attempts[0].started
    second_gap = attempts[2].started - attempts[1].started
    # base 0.5 s: after failure 1 about 0.5 s (±20 %), after failure 2 about 1 s (±20 %)
    assert first_gap >= 0.4
    assert second_gap >= 0.8
    assert second_gap > first_gap
    assert delivery["attempts"] == 3
    assert delivery["max_attempts"] == 3
    assert delivery["last_response_code"] == 200
    assert delivery["last_error"] is None
    assert delivery["next_attempt_at"] is None
    assert delivery["event_type"] == "tenant.updated"


async def test_dead_letter_then_retry_all_delivers(client, admin, receiver, db_conn):
    receiver.behaviour = always_unavailable
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    tenant = await create_tenant(client, admin)

    failed = await wait_status(client, admin, hook["id"], "failed")
    assert failed["attempts"] == 3
    assert failed["last_response_code"] == 503
    assert failed["last_error"] == "HTTP 503"
    assert failed["next_attempt_at"] is None
    assert len(receiver.for_delivery(failed["id"])) == 3

    dead = await get_json(client, "/api/v1/webhooks/deliveries/failed", admin)
    assert [d["id"] for d in dead] == [failed["id"]]
    assert dead[0]["webhook"] == {"id": hook["id"], "url": receiver.url, "tenant_id": None}
    event = dead[0]["event"]
    assert event["type"] == "tenant.created"
    assert event["tenant_id"] == tenant["id"]
    assert event["payload"]["id"] == tenant["id"]
    assert ISO_MS.match(event["created_at"])
    assert {k: v for k, v in dead[0].items() if k not in ("webhook", "event")} == failed
    stats = await get_json(client, "/api/v1/webhooks/deliveries/stats", admin)
    assert stats == {"total": 1, "pending": 0, "success": 0, "failed": 1}
    by_hook = await get_json(
        client, f"/api/v1/webhooks/deliveries/stats?webhook_id={hook['id']}", admin
    )
    assert by_hook == stats

    receiver.behaviour = fail_twice  # the 4th request overall: succeeds
    resp = await client.post("/api/v1/webhooks/deliveries/retry-all", headers=admin)
    assert resp.status == 200
    assert await resp.json() == {"retried": 1}
    delivered = await wait_status(client, admin, hook["id"], "success")
    assert delivered["id"] == failed["id"]
    assert delivered["attempts"] == 1  # retry-all cleared the counter
    assert len(receiver.for_delivery(failed["id"])) == 4
    assert await get_json(client, "/api/v1/webhooks/deliveries/failed", admin) == []
    audit = await db_conn.fetch(
        "SELECT resource_type, resource_id, changes FROM audit_logs WHERE action = $1",
        "delivery.retried",
    )
    assert [dict(a) for a in audit] == [
        {"resource_type": "delivery", "resource_id": None,
         "changes": {"retried": 1, "webhook_id": None}}
    ]  # fmt: skip
    resp = await client.post("/api/v1/webhooks/deliveries/retry-all", headers=admin)
    assert await resp.json() == {"retried": 0}


async def test_retry_one_delivery(client, admin, receiver):
    receiver.behaviour = always_unavailable
    hook = await create_webhook(client, admin, url=receiver.url, events=["tenant.created"])
    await create_tenant(client, admin)
    failed = await wait_status(client, admin, hook["id"], "failed")

    receiver.behaviour = fail_twice
    resp = await client.post(f"/api/v1/webhooks/deliveries/{failed['id']}/retry", headers=admin)
    assert resp.status == 200
    assert await resp.json() == {"success": True}
    await wait_status(client, admin, hook["id"], "success")
    # Not failed any more: nothing to retry.
    resp = await client.post(f"/api/v1/webhooks/deliveries/{failed['id']}/retry", headers=admin)
    assert await resp.json() == {"success": False}
    missing = "01900000-0000-7000-8000-000000000000"
    resp = await client.post(f"/api/v1/webhooks/deliveries/{missing}/retry", headers=admin)
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "DELIVERY_NOT_FOUND"
    resp = await client.post("/api/v1/webhooks/deliveries/nope/retry", headers=admin)
    assert resp.status == 400


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
    assert {k: v for k, v in rotated.items() if k not in ("secret", "updated_at")} == {
        k: v for k, v in hook.items() if k not in ("secret", "updated_at")
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
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    row = await client.app[DATABASE].pool.fetchrow(
        "SELECT status, attempts, leased_by, next_attempt_at <= now() AS due "
        "FROM webhook_deliveries"
    )
    # Released at once (its lease would otherwise hold it for 2 x timeout + 5 s).
    assert dict(row) == {"status": "pending", "attempts": 0, "leased_by": None, "due": True}
    answer.set()
    delivered = await wait_status(client, admin, hook["id"], "success")
    assert delivered["attempts"] == 1  # the released attempt was not counted
    assert [r.delivery_id for r in receiver.requests] == [delivered["id"]] * 2


async def test_a_notification_wakes_an_idle_worker(aiohttp_client, settings, receiver):
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


async def test_polling_delivers_without_notifications(aiohttp_client, settings, receiver):
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
