"""The delivery queue without a running worker: claims, leases, fencing and backoff."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from service.app import WEBHOOK_RUNTIME
from service.db.pool import connect
from service.http.appkeys import DEPS
from service.settings.options import Settings
from service.usecases.webhooks.deliveries import INACTIVE, DeliveryAttempts, retry_delay
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json
from tests.support.keys import key_headers


@pytest.fixture
def settings(fresh_db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(
            fresh_db_url,
            tmp_path,
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_CONCURRENCY="0",
            WEBHOOK_MAX_ATTEMPTS="2",
        )
    )


async def queue(client: Any, admin: dict[str, str], tenants: int) -> None:
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "events": ["tenant.created"]},
        headers=admin,
    )
    assert resp.status == 201
    for _ in range(tenants):
        await create_tenant(client, admin)


async def test_concurrent_claims_are_disjoint(client, admin, settings):
    await queue(client, admin, 12)
    repo = client.app[DEPS].repos.deliveries
    conns = [await connect(settings.database_url) for _ in range(4)]
    try:
        batches = await asyncio.gather(
            *(repo.claim_due_deliveries(c, f"worker-{i}", 5, 30) for i, c in enumerate(conns))
        )
        claimed = [claim.id for batch in batches for claim in batch]
        assert len(claimed) == len(set(claimed)) == 12
        # Leased rows are not due: nobody else can take them while the lease lasts.
        assert await repo.claim_due_deliveries(conns[0], "late", 50, 30) == []
    finally:
        for conn in conns:
            await conn.close()


async def test_an_expired_lease_moves_to_another_worker_and_fences_the_first(
    client, admin, db_conn
):
    await queue(client, admin, 1)
    repo = client.app[DEPS].repos.deliveries
    [stale] = await repo.claim_due_deliveries(db_conn, "crashed", 10, 0.05)
    assert stale.attempts == 0
    assert stale.active
    assert stale.event_type == "tenant.created"
    await asyncio.sleep(0.1)  # the lease runs out: the delivery is due again
    [fresh] = await repo.claim_due_deliveries(db_conn, "alive", 10, 30)
    assert fresh.id == stale.id
    # The first worker's late result is dropped; the live claim's result counts.
    assert not await repo.record_delivery_success(db_conn, stale, "crashed", seconds=0.1, code=200)
    status = await repo.record_delivery_failure(
        db_conn, stale, "crashed", seconds=0.1, code=500, error="HTTP 500", retry_in=1
    )
    assert status is None
    assert await repo.record_delivery_success(db_conn, fresh, "alive", seconds=0.1, code=204)
    row = await db_conn.fetchrow("SELECT * FROM webhook_deliveries WHERE id = $1", fresh.id)
    assert (row["status"], row["attempts"], row["last_response_code"]) == ("success", 1, 204)
    assert (row["leased_by"], row["lease_expires_at"], row["next_attempt_at"]) == (None,) * 3


async def test_failures_back_off_then_dead_letter(client, admin, db_conn):
    await queue(client, admin, 1)
    repo = client.app[DEPS].repos.deliveries
    [claim] = await repo.claim_due_deliveries(db_conn, "w", 10, 30)
    status = await repo.record_delivery_failure(
        db_conn, claim, "w", seconds=0.2, code=None, error="timed out", retry_in=60
    )
    assert status == "pending"
    row = await db_conn.fetchrow(
        "SELECT attempts, next_attempt_at - now() AS wait, last_error, last_response_code, "
        "leased_by FROM webhook_deliveries WHERE id = $1",
        claim.id,
    )
    assert row["attempts"] == 1
    assert 59 < row["wait"].total_seconds() <= 60
    assert (row["last_error"], row["last_response_code"], row["leased_by"]) == (
        "timed out", None, None,
    )  # fmt: skip
    assert await repo.claim_due_deliveries(db_conn, "w", 10, 30) == []  # not due yet
    await db_conn.execute("UPDATE webhook_deliveries SET next_attempt_at = now()")
    [again] = await repo.claim_due_deliveries(db_conn, "w", 10, 30)
    assert again.attempts == 1
    status = await repo.record_delivery_failure(
        db_conn, again, "w", seconds=0.2, code=502, error="HTTP 502", retry_in=60
    )
    assert status == "failed"  # WEBHOOK_MAX_ATTEMPTS is 2 here
    row = await db_conn.fetchrow("SELECT * FROM webhook_deliveries WHERE id = $1", claim.id)
    assert (row["attempts"], row["next_attempt_at"], row["last_response_code"]) == (2, None, 502)


def test_retry_delay_follows_the_design():
    for failures, nominal in ((1, 10), (2, 20), (3, 40), (9, 2560), (10, 3600), (60, 3600)):
        for _ in range(50):
            delay = retry_delay(failures, 10, 3600)
            assert nominal * 0.8 <= delay <= nominal * 1.2


async def test_history_and_dead_letters_page_newest_first(client, admin, db_conn):
    await queue(client, admin, 5)
    [hook_id] = [r["id"] for r in await db_conn.fetch("SELECT id::text FROM webhooks")]
    all_ids = [
        str(r["id"])
        for r in await db_conn.fetch("SELECT id FROM webhook_deliveries ORDER BY id DESC")
    ]
    seen: list[str] = []
    cursor = ""
    pages = []
    while True:
        page = await get_json(
            client, f"/api/v1/webhooks/{hook_id}/deliveries?limit=2{cursor}", admin
        )
        pages.append((len(page["data"]), page["has_more"]))
        seen += [d["id"] for d in page["data"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        assert page["next_cursor"] == page["data"][-1]["id"]
        cursor = f"&cursor={page['next_cursor']}"
    resp = await client.get(f"/api/v1/webhooks/{hook_id}/deliveries?limit=2", headers=admin)
    assert resp.headers["Link"] == (
        f'</api/v1/webhooks/{hook_id}/deliveries?limit=2&cursor={all_ids[1]}>; rel="next"'
    )
    assert pages == [(2, True), (2, True), (1, False)]
    assert seen == all_ids
    failed_ids = all_ids[1:4]
    await db_conn.execute(
        "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL "
        "WHERE id = ANY($1::uuid[])",
        failed_ids,
    )
    only_failed = await get_json(
        client, f"/api/v1/webhooks/{hook_id}/deliveries?status=failed", admin
    )
    assert [d["id"] for d in only_failed["data"]] == failed_ids
    resp = await client.get("/api/v1/webhooks/deliveries/failed?limit=2", headers=admin)
    first = await resp.json()
    assert [d["id"] for d in first] == failed_ids[:2]
    assert resp.headers["X-Next-Cursor"] == failed_ids[1]
    assert resp.headers["Link"] == (
        f'</api/v1/webhooks/deliveries/failed?limit=2&cursor={failed_ids[1]}>; rel="next"'
    )
    resp = await client.get(
        f"/api/v1/webhooks/deliveries/failed?limit=2&cursor={failed_ids[1]}", headers=admin
    )
    assert [d["id"] for d in await resp.json()] == failed_ids[2:]
    assert "X-Next-Cursor" not in resp.headers
    assert "Link" not in resp.headers


async def test_scoped_callers_see_and_retry_their_own_deliveries_only(client, admin, db_conn):
    mine = await create_tenant(client, admin)
    theirs = await create_tenant(client, admin)
    hooks = {}
    for name, tenant_id in (("mine", mine["id"]), ("theirs", theirs["id"]), ("global", None)):
        resp = await client.post(
            "/api/v1/webhooks",
            json={"url": "http://127.0.0.1:9/hook", "events": ["tenant.updated"],
                  "tenant_id": tenant_id},
            headers=admin,
        )  # fmt: skip
        hooks[name] = (await resp.json())["id"]
    for tenant in (mine, theirs):
        resp = await client.patch(
            f"/api/v1/tenants/{tenant['id']}", json={"name": "Changed"}, headers=admin
        )
        assert resp.status == 200
    await db_conn.execute("UPDATE webhook_deliveries SET status = 'failed'")
    by_hook = {
        str(r["webhook_id"]): str(r["id"])
        for r in await db_conn.fetch("SELECT webhook_id, id FROM webhook_deliveries")
    }
    scoped = await key_headers(client.app, ("read", "write"), tenant_id=mine["id"])

    stats = await get_json(client, "/api/v1/webhooks/deliveries/stats", scoped)
    assert stats == {"total": 1, "pending": 0, "success": 0, "failed": 1}
    everything = await get_json(client, "/api/v1/webhooks/deliveries/stats", admin)
    assert everything == {"total": 4, "pending": 0, "success": 0, "failed": 4}
    failed = await get_json(client, "/api/v1/webhooks/deliveries/failed", scoped)
    assert [d["webhook"]["id"] for d in failed] == [hooks["mine"]]
    for other in ("theirs", "global"):
        resp = await client.post(
            f"/api/v1/webhooks/deliveries/{by_hook[hooks[other]]}/retry", headers=scoped
        )
        assert (resp.status, (await resp.json())["error"]["code"]) == (404, "DELIVERY_NOT_FOUND")
    resp = await client.post("/api/v1/webhooks/deliveries/retry-all", headers=scoped)
    assert await resp.json() == {"retried": 1}
    after = await get_json(client, "/api/v1/webhooks/deliveries/stats", admin)
    assert after == {"total": 4, "pending": 1, "success": 0, "failed": 3}
    resp = await client.post(
        f"/api/v1/webhooks/deliveries/{by_hook[hooks['theirs']]}/retry", headers=admin
    )
    assert await resp.json() == {"success": True}
    audit = await db_conn.fetch(
        "SELECT tenant_id::text, resource_id, changes FROM audit_logs "
        "WHERE action = 'delivery.retried' ORDER BY id"
    )
    assert [dict(a) for a in audit] == [
        {"tenant_id": mine["id"], "resource_id": None,
         "changes": {"retried": 1, "webhook_id": None}},
        {"tenant_id": theirs["id"], "resource_id": by_hook[hooks["theirs"]],
         "changes": {"before": {"status": "failed", "attempts": 0},
                     "after": {"status": "pending", "attempts": 0}}},
    ]  # fmt: skip
    resp = await client.post(
        f"/api/v1/webhooks/deliveries/retry-all?webhook_id={hooks['global']}", headers=admin
    )
    assert await resp.json() == {"retried": 2}  # the global webhook saw both updates


async def test_deliveries_of_a_deactivated_webhook_are_parked_as_dead_letters(
    client, admin, db_conn
):
    await queue(client, admin, 1)
    [hook_id] = [r["id"] for r in await db_conn.fetch("SELECT id::text FROM webhooks")]
    resp = await client.patch(f"/api/v1/webhooks/{hook_id}", json={"active": False}, headers=admin)
    assert resp.status == 200
    deps = client.app[DEPS]
    [claim] = await deps.repos.deliveries.claim_due_deliveries(db_conn, "w", 10, 30)
    assert claim.active is False
    await DeliveryAttempts(deps, client.app[WEBHOOK_RUNTIME].sender, "w").run(claim)
    row = await db_conn.fetchrow("SELECT * FROM webhook_deliveries WHERE id = $1", claim.id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 0, INACTIVE)
    assert (row["leased_by"], row["next_attempt_at"]) == (None, None)
