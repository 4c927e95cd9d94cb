"""Retries with a small backoff base: growing gaps, the same delivery id on every
attempt, dead letters after WEBHOOK_MAX_ATTEMPTS, retry-all and retry of one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.http.appkeys import METRICS
from service.settings.options import Settings
from tests.support.api import create_tenant, get_json
from tests.support.webhooks import (
    ISO_MS,
    Receiver,
    always_unavailable,
    check_signed,
    create_webhook,
    delivery_settings,
    fail_twice,
    patch,
    wait_status,
)


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
    assert len({r.json["event_id"] for r in attempts}) == 1
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
    # Counted once each outcome is recorded: wait for the last one, then check them all.
    expected = {"success": 1.0, "failure": 2.0, "dead_letter": 1.0}
    assert await _attempt_counts(client.app, expected) == expected
    latency = _samples(client.app)["tenant_service_webhook_delivery_attempt_duration_seconds_count"]
    assert latency == 4


def _samples(app: web.Application) -> dict[str, float]:
    text = app[METRICS].exposition().decode()
    return {
        sample.name + "".join(f"|{v}" for v in sample.labels.values()): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def _attempt_counts(app: web.Application, expected: dict[str, float]) -> dict[str, float]:
    deadline = time.monotonic() + 10
    while True:
        samples = _samples(app)
        counts = {
            outcome: samples.get(f"tenant_service_webhook_delivery_attempts_total|{outcome}", 0.0)
            for outcome in expected
        }
        if counts == expected or time.monotonic() > deadline:
            return counts
        await asyncio.sleep(0.02)


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
