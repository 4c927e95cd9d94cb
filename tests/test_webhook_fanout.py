"""The fan-out: each committed change has one delivery per matching active webhook,
written in the change's own transaction (no worker runs here, so rows stay pending)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from service.db.pool import connect
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant

URL = "http://127.0.0.1:9/hook"


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(
            db_url,
            tmp_path,
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_CONCURRENCY="0",
            WEBHOOK_MAX_ATTEMPTS="4",
        )
    )


async def hook(client: Any, headers: dict[str, str], events: list[str], **body: Any) -> str:
    resp = await client.post(
        "/api/v1/webhooks", json={"url": URL, "events": events, **body}, headers=headers
    )
    data = await resp.json()
    assert resp.status == 201, data
    return str(data["id"])


async def received(db_conn: Any, hook_id: str) -> list[tuple[str, str | None]]:
    """(event type, event tenant) of each delivery queued for a webhook, in order."""
    rows = await db_conn.fetch(
        """
        SELECT d.event_type, e.tenant_id::text AS tenant_id, d.status, d.attempts,
               d.max_attempts, d.next_attempt_at <= now() AS due
        FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
        WHERE d.webhook_id = $1
        ORDER BY e.id
        """,
        hook_id,
    )
    assert all(
        (r["status"], r["attempts"], r["max_attempts"], r["due"]) == ("pending", 0, 4, True)
        for r in rows
    )
    return [(r["event_type"], r["tenant_id"]) for r in rows]


async def test_matching_rules(client, admin, db_conn):
    root = await create_tenant(client, admin)
    mid = await create_tenant(client, admin, parent_id=root["id"])
    leaf = await create_tenant(client, admin, parent_id=mid["id"])
    other = await create_tenant(client, admin)
    everything = await hook(client, admin, ["tenant.updated", "tenant.moved"])
    only_moves = await hook(client, admin, ["tenant.moved"])
    root_own = await hook(client, admin, ["tenant.updated"], tenant_id=root["id"])
    root_subtree = await hook(
        client, admin, ["tenant.updated", "tenant.moved"], tenant_id=root["id"],
        include_descendants=True,
    )  # fmt: skip
    mid_own = await hook(client, admin, ["tenant.updated"], tenant_id=mid["id"])
    inactive = await hook(client, admin, ["tenant.updated"], tenant_id=leaf["id"], active=False)
    other_subtree = await hook(
        client, admin, ["tenant.moved"], tenant_id=other["id"], include_descendants=True
    )

    for t in (root, mid, leaf):
        resp = await client.patch(
            f"/api/v1/tenants/{t['id']}", json={"name": "New name"}, headers=admin
        )
        assert resp.status == 200
    resp = await client.post(
        f"/api/v1/tenants/{mid['id']}/move", json={"new_parent_id": other["id"]}, headers=admin
    )
    assert resp.status == 200

    updated = [("tenant.updated", t["id"]) for t in (root, mid, leaf)]
    moved = [("tenant.moved", mid["id"])]
    assert await received(db_conn, everything) == updated + moved
    assert await received(db_conn, only_moves) == moved
    assert await received(db_conn, root_own) == updated[:1]
    # Below root: its updates, and the move that took mid (and leaf) out of its subtree.
    assert await received(db_conn, root_subtree) == updated + moved
    assert await received(db_conn, mid_own) == updated[1:2]
    assert await received(db_conn, inactive) == []
    assert await received(db_conn, other_subtree) == moved


async def test_a_failed_change_queues_nothing(client, admin, db_conn):
    tenant = await create_tenant(client, admin)
    watcher = await hook(client, admin, ["tenant.created", "tenant.updated"])
    resp = await client.post(
        "/api/v1/tenants", json={"name": "Dup", "slug": tenant["slug"]}, headers=admin
    )
    assert resp.status == 409
    resp = await client.post(
        "/api/v1/tenants/batch",
        json={"tenants": [{"name": "A", "slug": "fan_ok_a"}, {"name": "B", "slug": "BAD"}]},
        headers=admin,
    )
    assert resp.status == 400
    resp = await client.patch(
        f"/api/v1/tenants/{tenant['id']}", json={"name": tenant["name"]}, headers=admin
    )
    assert resp.status == 200  # no change: no event, no delivery
    assert await received(db_conn, watcher) == []
    created = await create_tenant(client, admin)  # the control: a change that commits
    assert await received(db_conn, watcher) == [("tenant.created", created["id"])]


async def test_workers_are_woken_when_the_change_commits(client, admin, settings):
    watcher = await hook(client, admin, ["tenant.created"])
    observer = await connect(settings.database_url)
    try:
        woken = asyncio.Event()
        await observer.add_listener("webhook_deliveries", lambda *_: woken.set())
        tenant = await create_tenant(client, admin)
        await asyncio.wait_for(woken.wait(), 5)  # the workers are told at commit
        row = await observer.fetchrow(
            "SELECT count(*) AS deliveries, min(e.tenant_id::text) AS tenant "
            "FROM webhook_deliveries d JOIN events e ON e.id = d.event_id "
            "WHERE d.webhook_id = $1",
            watcher,
        )
        assert (row["deliveries"], row["tenant"]) == (1, tenant["id"])
    finally:
        await observer.close()
