"""The audit log API: filters, time ranges, the keyset cursor, single entries, the
subtree of a tenant-scoped admin, and the append-only guard in the database."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.base.ids import uuid7
from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.gdpr import error_of
from tests.support.keys import key_headers, make_key

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


async def test_an_entry_has_every_field_and_can_be_read_alone(client: TestClient) -> None:
    issued = await make_key(client.app)
    headers = {"X-API-Key": issued.plaintext, "X-Request-ID": "audit-fields-1"}
    tenant = await create_tenant(client, headers, name="Audited", slug=unique_slug("aud"))
    [entry] = await get_json(client, f"/api/v1/audit-logs?tenant_id={tenant['id']}", headers)
    assert TIMESTAMP.match(entry["created_at"])
    assert entry == {
        "id": entry["id"],
        "tenant_id": tenant["id"],
        "actor_id": str(issued.key.id),
        "actor_type": "api_key",
        "action": "tenant.created",
        "resource_type": "tenant",
        "resource_id": tenant["id"],
        "changes": {"before": None, "after": tenant},
        "request_id": "audit-fields-1",
        "ip_address": "127.0.0.1",
        "created_at": entry["created_at"],
    }
    assert await get_json(client, f"/api/v1/audit-logs/{entry['id']}", headers) == entry
    resp = await client.get(f"/api/v1/audit-logs/{uuid7()}", headers=headers)
    assert await error_of(resp) == (404, "AUDIT_LOG_NOT_FOUND")


async def test_filters_combine(client: TestClient) -> None:
    first = await make_key(client.app, name="first")
    second = await make_key(client.app, name="second")
    a = {"X-API-Key": first.plaintext}
    b = {"X-API-Key": second.plaintext}
    tenant = await create_tenant(client, a)
    tid = tenant["id"]
    assert (await client.patch(f"/api/v1/tenants/{tid}", json={"name": "A2"}, headers=a)).ok
    resp = await client.post(f"/api/v1/tenants/{tid}/consent", json={"purpose": "ads"}, headers=a)
    assert resp.status == 201
    assert (await client.patch(f"/api/v1/tenants/{tid}", json={"name": "B2"}, headers=b)).ok

    async def actions(query: str) -> list[str]:
        return [e["action"] for e in await get_json(client, f"/api/v1/audit-logs?{query}", a)]

    assert await actions(f"tenant_id={tid}") == [
        "tenant.updated", "consent.granted", "tenant.updated", "tenant.created",
    ]  # fmt: skip
    assert await actions(f"tenant_id={tid}&action=tenant.updated") == ["tenant.updated"] * 2
    assert await actions(f"tenant_id={tid}&resource_type=consent") == ["consent.granted"]
    assert await actions(f"actor_id={second.key.id}") == ["tenant.updated"]
    assert await actions(f"actor_id={first.key.id}&action=consent.granted") == ["consent.granted"]
    # without tenant_id the other filters drive the query alone
    by_b = await get_json(client, f"/api/v1/audit-logs?actor_id={second.key.id}", a)
    assert by_b[0]["changes"] == {"before": {"name": "A2"}, "after": {"name": "B2"}}
    assert await actions("action=no.such.action") == []
    assert await actions(f"tenant_id={uuid.uuid4()}") == []


async def insert_entries(
    conn: asyncpg.Connection, tenant_id: uuid.UUID, times: list[datetime]
) -> list[uuid.UUID]:
    """Entries at chosen instants (INSERT is what the log allows)."""
    ids = []
    for at in times:
        entry_id = uuid7()
        ids.append(entry_id)
        await conn.execute(
            "INSERT INTO audit_logs (id, tenant_id, actor_id, actor_type, action, "
            "resource_type, resource_id, created_at) "
            "VALUES ($1, $2, 'clock', 'system', 'tenant.updated', 'tenant', $4, $3)",
            entry_id, tenant_id, at, str(tenant_id),
        )  # fmt: skip
    return ids


async def test_time_range_is_from_inclusive_to_exclusive(client: TestClient, admin, db_conn):
    tenant_id = uuid.uuid4()
    base = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    times = [base + timedelta(hours=h) for h in range(5)]  # 12:00 .. 16:00
    ids = [str(i) for i in await insert_entries(db_conn, tenant_id, times)]

    async def window(**params: str) -> list[str]:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        path = f"/api/v1/audit-logs?tenant_id={tenant_id}&{query}"
        return [e["id"] for e in await get_json(client, path, admin)]

    assert await window(**{"from": "2025-03-01T13:00:00Z"}) == ids[1:][::-1]
    assert await window(to="2025-03-01T13:00:00Z") == ids[:1]
    assert await window(**{"from": "2025-03-01T13:00:00Z", "to": "2025-03-01T15:00:00Z"}) == [
        ids[2], ids[1],
    ]  # fmt: skip
    # an offset is honoured: 14:30+02:00 is 12:30Z
    assert await window(to="2025-03-01T14:30:00%2B02:00") == ids[:1]
    assert await window(**{"from": "2025-03-01T16:00:00.001Z"}) == []
    # the range also narrows the whole log and a scoped subtree (same query shapes)
    whole = await get_json(
        client, "/api/v1/audit-logs?from=2025-03-01T14:00:00Z&to=2025-03-01T14:00:01Z", admin
    )
    assert [e["id"] for e in whole] == [ids[2]]


async def test_walking_250_entries_by_cursor_has_no_gap_or_repeat(client: TestClient, db_conn):
    issued = await make_key(client.app, name="walker")
    headers = {"X-API-Key": issued.plaintext}
    root = await create_tenant(client, headers)
    for count in (100, 100, 49):  # one entry per created tenant; with the root: 250
        items = [
            {"name": "W", "slug": unique_slug("w"), "parent_id": root["id"]} for _ in range(count)
        ]
        resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=headers)
        assert resp.status == 201, await resp.json()
    expected = [
        str(r["id"])
        for r in await db_conn.fetch(
            "SELECT id FROM audit_logs WHERE actor_id = $1 ORDER BY id DESC", str(issued.key.id)
        )
    ]
    assert len(expected) == 250
    for limit in (100, 7):
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            path = f"/api/v1/audit-logs?actor_id={issued.key.id}&limit={limit}"
            resp = await client.get(path + (f"&cursor={cursor}" if cursor else ""), headers=headers)
            page = await resp.json()
            assert resp.status == 200, page
            pages += 1
            seen += [e["id"] for e in page]
            cursor = resp.headers.get("X-Next-Cursor")
            if cursor is None:
                break
            assert cursor == page[-1]["id"]
            assert len(page) == limit
        assert seen == expected, f"limit {limit}"
        assert pages == -(-250 // limit)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=ten", "limit"),
        ("cursor=nope", "cursor"),
        ("tenant_id=123", "tenant_id"),
        ("from=yesterday", "from"),
        ("from=2025-03-01T10:00:00", "from"),  # no offset: ambiguous
        ("from=0001-01-01T00:00:00%2B01:00", "from"),  # before year 1 in UTC
        ("to=9999-12-31T23:59:59-01:00", "to"),
        ("from=2025-03-02T00:00:00Z&to=2025-03-01T00:00:00Z", "to"),
        ("action=", "action"),
        ("actions=tenant.created", "actions"),
        ("limit=5&limit=6", "limit"),
    ],
)
async def test_bad_queries_are_400(client: TestClient, admin, query: str, field: str) -> None:
    resp = await client.get(f"/api/v1/audit-logs?{query}", headers=admin)
    body = await resp.json()
    assert resp.status == 400, body
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"][0]["field"] == field


async def test_no_api_changes_or_deletes_entries(client: TestClient, admin) -> None:
    [entry] = await get_json(client, "/api/v1/audit-logs?limit=1", admin)
    for method in ("PATCH", "PUT", "DELETE"):
        resp = await client.request(
            method, f"/api/v1/audit-logs/{entry['id']}", json={}, headers=admin
        )
        assert await error_of(resp) == (405, "METHOD_NOT_ALLOWED")
    resp = await client.delete("/api/v1/audit-logs", headers=admin)
    assert await error_of(resp) == (405, "METHOD_NOT_ALLOWED")
    assert await get_json(client, f"/api/v1/audit-logs/{entry['id']}", admin) == entry


async def test_audit_routes_need_read_and_admin(client: TestClient) -> None:
    for scopes in (("read", "write"), ("admin",)):
        headers = await key_headers(client.app, scopes)
        resp = await client.get("/api/v1/audit-logs", headers=headers)
        assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")


async def test_scoped_admin_sees_its_subtree_only(client: TestClient, admin) -> None:
    root = await create_tenant(client, admin)
    mine = await create_tenant(client, admin, parent_id=root["id"])
    below = await create_tenant(client, admin, parent_id=mine["id"])
    scoped_key = await make_key(client.app, ("read", "write", "admin"), tenant_id=mine["id"])
    scoped = {"X-API-Key": scoped_key.plaintext}
    await create_tenant(client, scoped, parent_id=below["id"])

    visible_tenants = {
        e["tenant_id"] for e in await get_json(client, "/api/v1/audit-logs?limit=100", scoped)
    }
    subtree = {t["id"] for t in await get_json(
        client, f"/api/v1/tenants/{mine['id']}/descendants", admin)} | {mine["id"]}  # fmt: skip
    assert visible_tenants <= subtree
    assert {mine["id"], below["id"]} <= visible_tenants
    # the whole log holds entries of the root and global ones (keys made by the system)
    everything = await get_json(client, "/api/v1/audit-logs?limit=100", admin)
    outside = [e for e in everything if e["tenant_id"] not in subtree]
    assert any(e["tenant_id"] is None for e in outside)
    assert any(e["tenant_id"] == root["id"] for e in outside)
    for entry in outside[:5]:
        resp = await client.get(f"/api/v1/audit-logs/{entry['id']}", headers=scoped)
        assert await error_of(resp) == (404, "AUDIT_LOG_NOT_FOUND")
    inside = next(e for e in everything if e["tenant_id"] == below["id"])
    assert await get_json(client, f"/api/v1/audit-logs/{inside['id']}", scoped) == inside
    resp = await client.get(f"/api/v1/audit-logs?tenant_id={root['id']}", headers=scoped)
    assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
    own = await get_json(client, f"/api/v1/audit-logs?tenant_id={below['id']}", scoped)
    assert {e["tenant_id"] for e in own} == {below["id"]}


async def _refused(conn: asyncpg.Connection, sql: str, *args: Any) -> None:
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="audit log"):
        await conn.execute(sql, *args)


async def test_the_database_refuses_updates_and_deletes_of_entries(client, admin, db_conn):
    await create_tenant(client, admin)
    entry_id = await db_conn.fetchval("SELECT id FROM audit_logs ORDER BY id DESC LIMIT 1")
    before = dict(await db_conn.fetchrow("SELECT * FROM audit_logs WHERE id = $1", entry_id))
    await _refused(db_conn, "UPDATE audit_logs SET action = 'x' WHERE id = $1", entry_id)
    await _refused(db_conn, "UPDATE audit_logs SET changes = NULL WHERE id = $1", entry_id)
    await _refused(db_conn, "DELETE FROM audit_logs WHERE id = $1", entry_id)
    await _refused(db_conn, "DELETE FROM audit_logs")
    await _refused(db_conn, "TRUNCATE audit_logs")
    # the redaction door only lets `changes` become the marker, nothing else
    async with db_conn.transaction():
        await db_conn.execute("SELECT set_config('tenant_service.audit_redaction', 'on', true)")
        await _refused(
            db_conn,
            "UPDATE audit_logs SET changes = '{\"redacted\": true}', actor_id = 'x' WHERE id = $1",
            entry_id,
        )
    async with db_conn.transaction():
        await db_conn.execute("SELECT set_config('tenant_service.audit_redaction', 'on', true)")
        await _refused(
            db_conn, "UPDATE audit_logs SET changes = '{\"hacked\": 1}' WHERE id = $1", entry_id
        )
    # the retention door only opens for entries older than its cutoff
    async with db_conn.transaction():
        await db_conn.execute(
            "SELECT set_config('tenant_service.audit_retention_before', "
            "(now() - interval '1 day')::text, true)"
        )
        await _refused(db_conn, "DELETE FROM audit_logs WHERE id = $1", entry_id)
    # and a door opened in one transaction is shut in the next
    async with db_conn.transaction():
        await db_conn.execute("SELECT set_config('tenant_service.audit_redaction', 'on', true)")
    await _refused(
        db_conn, "UPDATE audit_logs SET changes = '{\"redacted\": true}' WHERE id = $1", entry_id
    )
    after = dict(await db_conn.fetchrow("SELECT * FROM audit_logs WHERE id = $1", entry_id))
    assert after == before
