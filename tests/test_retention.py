"""purge-expired with backdated rows: the dry run reports what the real run removes,
batch by batch; rows inside their retention survive; 0 days keeps everything."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.base.ids import uuid7
from service.http.appkeys import USE_CASES
from tests.support.api import create_tenant, get_json
from tests.support.gdpr import add_delivery, add_webhook, error_of
from tests.support.invariants import tree_problems
from tests.support.keys import key_headers, make_key

RETENTION_ENV = {
    "AUDIT_LOG_RETENTION_DAYS": "30",
    "DELIVERY_RETENTION_DAYS": "7",
    "CONSENT_RETENTION_DAYS": "60",
    "ARCHIVED_TENANT_RETENTION_DAYS": "10",
}
TABLES = ("audit_logs", "webhook_deliveries", "events", "consents", "tenants")


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    """Every test counts whole tables: a database of its own."""
    return fresh_db_url


@pytest.fixture
def settings_env() -> dict[str, str]:
    return RETENTION_ENV


async def days_ago(conn: asyncpg.Connection, days: float) -> Any:
    return await conn.fetchval("SELECT now() - make_interval(secs => $1)", days * 86400)


async def add_audit(conn: asyncpg.Connection, days: float) -> UUID:
    entry_id = uuid7()
    await conn.execute(
        "INSERT INTO audit_logs (id, actor_id, actor_type, action, resource_type, created_at) "
        "VALUES ($1, 'backdated', 'system', 'tenant.updated', 'tenant', $2)",
        entry_id, await days_ago(conn, days),
    )  # fmt: skip
    return entry_id


async def add_event(conn: asyncpg.Connection, tenant_id: str, days: float) -> UUID:
    event_id = uuid7()
    await conn.execute(
        "INSERT INTO events (id, type, tenant_id, payload, created_at) "
        "VALUES ($1, 'tenant.updated', $2, '{}', $3)",
        event_id, UUID(tenant_id), await days_ago(conn, days),
    )  # fmt: skip
    return event_id


async def add_consent(
    conn: asyncpg.Connection, tenant_id: str, *, revoked: float | None, expires: float | None
) -> UUID:
    consent_id = uuid7()
    await conn.execute(
        "INSERT INTO consents (id, tenant_id, purpose, granted_at, granted_by, revoked_at, "
        "revoked_by, expires_at) VALUES ($1, $2, $3, now() - interval '400 days', 'k', $4, "
        "CASE WHEN $4::timestamptz IS NULL THEN NULL ELSE 'k' END, $5)",
        consent_id, UUID(tenant_id), f"p{consent_id.hex[-8:]}",
        None if revoked is None else await days_ago(conn, revoked),
        None if expires is None else await days_ago(conn, expires),
    )  # fmt: skip
    return consent_id


async def archive(client: TestClient, admin: dict[str, str], conn: Any, t: dict, days: float):
    assert (await client.delete(f"/api/v1/tenants/{t['id']}", headers=admin)).status == 204
    await conn.execute(
        "UPDATE tenants SET deleted_at = $2 WHERE id = $1",
        UUID(t["id"]),
        await days_ago(conn, days),
    )


async def table_ids(conn: asyncpg.Connection) -> dict[str, set[UUID]]:
    return {t: {r["id"] for r in await conn.fetch(f"SELECT id FROM {t}")} for t in TABLES}


async def build(client: TestClient, admin: dict[str, str], conn: Any) -> dict[str, set[UUID]]:
    """Backdated rows on both sides of each retention; returns the ids that must go."""
    owner = await create_tenant(client, admin)
    gone: dict[str, set[UUID]] = {t: set() for t in TABLES}
    for days in (31, 45, 90, 200, 400, 31.1, 60):
        gone["audit_logs"].add(await add_audit(conn, days))
    await add_audit(conn, 29)
    hook = await add_webhook(client, conn, owner["id"])
    old_done = await add_event(conn, owner["id"], 8)  # every delivery finished long ago
    old_pending = await add_event(conn, owner["id"], 9)  # one delivery still pending
    old_bare = await add_event(conn, owner["id"], 20)  # never had a delivery
    recent = await add_event(conn, owner["id"], 6)
    gone["events"] |= {old_done, old_bare}
    for status in ("success", "failed", "success"):
        gone["webhook_deliveries"].add(
            await add_delivery(conn, hook, old_done, status=status,
                               updated_at=await days_ago(conn, 8))
        )  # fmt: skip
    gone["webhook_deliveries"].add(
        await add_delivery(conn, hook, old_pending, status="failed",
                           updated_at=await days_ago(conn, 30))
    )  # fmt: skip
    await add_delivery(
        conn, hook, old_pending, status="pending", updated_at=await days_ago(conn, 9)
    )
    await add_delivery(conn, hook, recent, status="success", updated_at=await days_ago(conn, 6))
    gone["consents"] |= {
        await add_consent(conn, owner["id"], revoked=61, expires=None),
        await add_consent(conn, owner["id"], revoked=None, expires=90),
        await add_consent(conn, owner["id"], revoked=100, expires=-30),  # revoked first
    }
    await add_consent(conn, owner["id"], revoked=59, expires=None)
    await add_consent(conn, owner["id"], revoked=None, expires=None)
    await add_consent(conn, owner["id"], revoked=None, expires=-10)  # still active
    await add_consent(conn, owner["id"], revoked=None, expires=59)  # expired, not long ago
    # archived tenants: a leaf; a parent with its child; a parent whose child is too
    # recent (both stay); an archived child under an active parent; one archived recently
    leaf = await create_tenant(client, admin)
    parent = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=parent["id"])
    grandchild = await create_tenant(client, admin, parent_id=child["id"])
    held = await create_tenant(client, admin)
    fresh_kid = await create_tenant(client, admin, parent_id=held["id"])
    under_active = await create_tenant(client, admin, parent_id=owner["id"])
    recent_archive = await create_tenant(client, admin)
    for tenant, days in (
        (grandchild, 40),
        (child, 12),
        (parent, 11),
        (leaf, 11),
        (fresh_kid, 5),
        (held, 11),
        (under_active, 11),
        (recent_archive, 9),
    ):
        await archive(client, admin, conn, tenant, days)  # fmt: skip
    gone["tenants"] |= {UUID(t["id"]) for t in (leaf, parent, child, grandchild, under_active)}
    return gone


async def purge_expired(client: TestClient, headers: dict[str, str], **body: Any) -> dict:
    resp = await client.post("/api/v1/maintenance/purge-expired", json=body, headers=headers)
    data: dict[str, Any] = await resp.json()
    assert resp.status == 200, data
    return data


async def test_dry_run_counts_equal_the_real_run_and_survivors_stay(client, db_conn) -> None:
    issued = await make_key(client.app)
    admin = {"X-API-Key": issued.plaintext}
    gone = await build(client, admin, db_conn)
    expected = {
        "audit_logs": 7, "webhook_deliveries": 4, "events": 2, "consents": 3,
        "archived_tenants": 5, "idempotency_keys": 0, "context_revisions": 0,
        "context_history": 0,
    }  # fmt: skip
    assert {k: len(v) for k, v in gone.items() if k != "tenants"} == {
        "audit_logs": 7, "webhook_deliveries": 4, "events": 2, "consents": 3,
    }  # fmt: skip
    before = await table_ids(db_conn)
    audit_count = len(before["audit_logs"])
    # a purged tenant's own (recent) events go with it, outside the events count
    with_tenants = {
        r["id"]
        for r in await db_conn.fetch(
            "SELECT id FROM events WHERE tenant_id = ANY($1::uuid[])", list(gone["tenants"])
        )
    }
    assert with_tenants
    assert not with_tenants & gone["events"]
    dry = await purge_expired(client, admin, dry_run=True)
    assert dry == {"dry_run": True, **expected}
    assert await table_ids(db_conn) == before, "a dry run changes nothing"

    retention = client.app[USE_CASES].retention
    retention.batch_size, retention.tenant_batch_size = 2, 2  # many small batches
    real = await purge_expired(client, admin)
    assert real == {"dry_run": False, **expected}
    after = await table_ids(db_conn)
    for table in ("webhook_deliveries", "consents", "tenants"):
        assert after[table] == before[table] - gone[table], table
    assert after["events"] == before["events"] - gone["events"] - with_tenants
    # the audit log lost exactly the old entries and gained the run's own entries
    assert before["audit_logs"] - after["audit_logs"] == gone["audit_logs"]
    new_entries = await db_conn.fetch(
        "SELECT action, tenant_id, actor_id, changes FROM audit_logs WHERE id <> ALL($1::uuid[]) "
        "ORDER BY id",
        list(before["audit_logs"]),
    )
    assert len(after["audit_logs"]) == audit_count - 7 + len(new_entries)
    verified = await get_json(client, "/api/v1/audit-logs/verify", admin)
    assert (verified["valid"], verified["purged"]) == (True, 7), verified
    # each batch of audit entries left a checkpoint of the audit chain (docs/security.md)
    checkpoints = [e for e in new_entries if e["action"] == "audit.purged"]
    assert len(checkpoints) == 4  # 7 entries in batches of 2
    assert sum(c["changes"]["entries"] for c in checkpoints) == 7
    new_entries = [e for e in new_entries if e["action"] != "audit.purged"]
    assert [e["action"] for e in new_entries] == ["tenant.purged"] * 5 + [
        "maintenance.purge_expired"
    ]
    assert {e["tenant_id"] for e in new_entries[:5]} == gone["tenants"]
    assert all(e["actor_id"] == str(issued.key.id) for e in new_entries)
    summary = new_entries[-1]["changes"]
    assert (summary["dry_run"], summary["completed"], summary["counts"]) == (False, True, expected)
    assert set(summary["cutoffs"]) == set(expected)
    # batches of 2: 2 + 1 + 2 + 4 for the rows, at least 3 for 5 tenants (leaves first)
    assert summary["batches"] >= 12
    assert new_entries[-1]["tenant_id"] is None
    assert await tree_problems(db_conn) == []
    # nothing is left to remove
    again = await purge_expired(client, admin, dry_run=True)
    assert again == {"dry_run": True, **dict.fromkeys(expected, 0)}


async def test_purged_archived_tenants_leave_only_redacted_entries(client, admin, db_conn):
    tenant = await create_tenant(client, admin, name="Old archived one")
    await archive(client, admin, db_conn, tenant, 11)
    result = await purge_expired(client, admin)
    assert result["archived_tenants"] == 1
    trail = await get_json(client, f"/api/v1/audit-logs?tenant_id={tenant['id']}", admin)
    assert [e["action"] for e in trail] == ["tenant.purged", "tenant.deleted", "tenant.created"]
    assert trail[0]["changes"] == {"redacted": True, "reason": "retention", "cascade": False}
    assert all(e["changes"] == {"redacted": True} for e in trail[1:])
    assert (
        await db_conn.fetchval(
            "SELECT count(*) FROM events WHERE tenant_id = $1", UUID(tenant["id"])
        )
        == 0
    )
    slug_free = await create_tenant(client, admin, slug=tenant["slug"])
    assert slug_free["slug"] == tenant["slug"]


@pytest.mark.parametrize(
    "settings_env",
    [dict.fromkeys(RETENTION_ENV, "0")],
    ids=["zero-days-keeps-everything"],
)
async def test_zero_days_keeps_everything(client, admin, db_conn, settings_env) -> None:
    await build(client, admin, db_conn)
    before = await table_ids(db_conn)
    zeros = dict.fromkeys(("audit_logs", "webhook_deliveries", "events", "consents",
                           "archived_tenants", "idempotency_keys", "context_revisions",
                           "context_history"),
                          0)  # fmt: skip
    assert await purge_expired(client, admin, dry_run=True) == {"dry_run": True, **zeros}
    assert await purge_expired(client, admin, dry_run=False) == {"dry_run": False, **zeros}
    after = await table_ids(db_conn)
    assert after["audit_logs"] >= before["audit_logs"]
    assert {t: after[t] for t in TABLES[1:]} == {t: before[t] for t in TABLES[1:]}


async def test_who_may_run_it_and_bodies(client: TestClient, admin) -> None:
    path = "/api/v1/maintenance/purge-expired"
    resp = await client.post(path, headers=admin)  # no body: a real run
    assert (await resp.json())["dry_run"] is False
    for body in ({"dry_run": "yes"}, {"dryrun": True}, []):
        resp = await client.post(path, json=body, headers=admin)
        assert await error_of(resp) == (400, "VALIDATION_ERROR"), body
    writer = await key_headers(client.app, ("read", "write"))
    resp = await client.post(path, json={"dry_run": True}, headers=writer)
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    tenant = await create_tenant(client, admin)
    scoped = await key_headers(client.app, ("read", "admin"), tenant_id=tenant["id"])
    resp = await client.post(path, json={"dry_run": True}, headers=scoped)
    assert await error_of(resp) == (403, "TENANT_ACCESS_DENIED")
