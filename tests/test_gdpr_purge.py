"""GDPR purge: the tenant(s) and every row they own are gone, the slug is free, and a
scan of every text, JSON and UUID column of every table finds the purged tenants' ids,
slugs and names only in redacted audit entries."""

from __future__ import annotations

import secrets
from typing import Any
from uuid import UUID

import asyncpg
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json, move
from tests.support.gdpr import (
    add_delivery,
    add_permission,
    add_role,
    add_sensitive_config,
    add_webhook,
    assign_role,
    error_of,
    events_of,
)
from tests.support.invariants import tree_problems
from tests.support.keys import key_headers, make_key

SCANNED_TYPES = ("text", "varchar", "bpchar", "uuid", "json", "jsonb", "_text", "_varchar", "_uuid")


async def scan_database(conn: asyncpg.Connection, needles: set[str]) -> list[dict[str, Any]]:
    """Every (table, column, row) of every user table where a needle appears."""
    columns = await conn.fetch(
        """
        SELECT c.table_name, c.column_name
        FROM information_schema.columns c
        JOIN information_schema.tables t
          ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
          AND c.udt_name = ANY($1::text[])
        ORDER BY c.table_name, c.column_name
        """,
        list(SCANNED_TYPES),
    )
    assert {r["table_name"] for r in columns} >= {
        "tenants", "tenant_closure", "config_entries", "permission_policies", "api_keys",
        "roles", "events", "audit_logs", "webhooks", "webhook_deliveries", "consents",
    }  # fmt: skip
    hits: list[dict[str, Any]] = []
    for col in columns:
        table, column = col["table_name"], col["column_name"]
        for needle in needles:
            rows = await conn.fetch(
                f'SELECT ctid::text AS row FROM "{table}" WHERE strpos("{column}"::text, $1) > 0',
                needle,
            )
            hits += [{"table": table, "column": column, "needle": needle, "row": r["row"]}
                     for r in rows]  # fmt: skip
    return hits


async def build_world(client: TestClient, admin: dict[str, str], conn: Any) -> dict[str, Any]:
    """R ─ P ─ C1 ─ G(archived); C2 was P's child and moved up to R; O is unrelated."""
    tag = secrets.token_hex(4)
    root = await create_tenant(client, admin, name=f"Keeper {tag}")
    other = await create_tenant(client, admin, name=f"Other {tag}")
    purged = await create_tenant(
        client, admin, parent_id=root["id"], name=f"Old Name {tag}", slug=f"old_slug_{tag}",
        config={"theme": "dark"},
    )  # fmt: skip
    pid = purged["id"]
    resp = await client.patch(
        f"/api/v1/tenants/{pid}",
        json={"name": f"Purge Target {tag}", "slug": f"purge_me_{tag}", "metadata": {"n": 1}},
        headers=admin,
    )
    purged = await resp.json()
    await add_sensitive_config(client, admin, pid, "api_token", f"token-{tag}")
    await add_permission(client, admin, pid, "exports", True, "LOCKED")
    role_id = await add_role(client, admin, pid, f"role {tag}", ("read", "write"))
    tenant_key = await make_key(client.app, ("read", "write"), tenant_id=pid)
    await assign_role(client, admin, tenant_key.key.id, role_id)
    scoped = {"X-API-Key": tenant_key.plaintext}
    for purpose in ("marketing", "analytics"):
        resp = await client.post(
            f"/api/v1/tenants/{pid}/consent", json={"purpose": purpose}, headers=scoped
        )
        assert resp.status == 201
    assert (await client.delete(f"/api/v1/tenants/{pid}/consent/marketing", headers=scoped)).ok
    child = await create_tenant(client, scoped, parent_id=pid, name=f"Child One {tag}")
    grandchild = await create_tenant(client, admin, parent_id=child["id"], name=f"Grand {tag}")
    assert (await client.delete(f"/api/v1/tenants/{grandchild['id']}", headers=admin)).ok
    moved = await create_tenant(client, admin, parent_id=pid, name=f"Moved Out {tag}")
    status, _ = await move(client, admin, moved["id"], root["id"])
    assert status == 200
    # webhooks: P's own, R's with include_descendants, a global one; deliveries of P's
    # and C2's events
    own_hook = await add_webhook(client, conn, pid)
    root_hook = await add_webhook(client, conn, root["id"], include_descendants=True)
    global_hook = await add_webhook(client, conn, None)
    p_event = (await events_of(conn, pid))[-1]["id"]
    moved_event = (await events_of(conn, moved["id"]))[-1]["id"]
    await add_delivery(conn, own_hook, p_event)
    await add_delivery(conn, root_hook, p_event, status="failed")
    # that failure's streak: R's webhook failing for events from P's subtree
    await conn.execute(
        "INSERT INTO webhook_source_health (webhook_id, source_id, failing_since, dead_letters) "
        "VALUES ($1, $2, now(), 1)", root_hook, UUID(pid),
    )  # fmt: skip
    await add_delivery(conn, global_hook, p_event, status="pending")
    kept_delivery = await add_delivery(conn, root_hook, moved_event)
    return {
        "tag": tag, "root": root, "other": other, "purged": purged, "child": child,
        "grandchild": grandchild, "moved": moved, "tenant_key": tenant_key,
        "kept_delivery": kept_delivery, "role_id": role_id,
        "names": {f"Old Name {tag}", f"Purge Target {tag}", f"Child One {tag}", f"Grand {tag}"},
        "slugs": {f"old_slug_{tag}", purged["slug"], child["slug"], grandchild["slug"]},
    }  # fmt: skip


async def test_purge_leaves_the_tenants_only_in_redacted_audit_entries(client, admin, db_conn):
    world = await build_world(client, admin, db_conn)
    pid = world["purged"]["id"]
    ids = [pid, world["child"]["id"], world["grandchild"]["id"]]
    path = f"/api/v1/tenants/{pid}/purge"
    slug = world["purged"]["slug"]
    resp = await client.post(path, json={"confirm": "wrong"}, headers=admin)
    assert await error_of(resp) == (400, "VALIDATION_ERROR")
    resp = await client.post(path, json={"confirm": slug}, headers=admin)
    assert await error_of(resp) == (409, "HAS_CHILDREN")
    assert (await get_json(client, f"/api/v1/tenants/{pid}", admin))["slug"] == slug

    expected = {
        table: await db_conn.fetchval(
            f"SELECT count(*) FROM {table} WHERE tenant_id = ANY($1::uuid[])", ids
        )
        for table in ("config_entries", "permission_policies", "consents", "webhooks",
                      "api_keys", "roles", "events")
    }  # fmt: skip
    assert expected == {
        "config_entries": 2, "permission_policies": 1, "consents": 2, "webhooks": 1,
        "api_keys": 1, "roles": 1, "events": expected["events"],
    }  # fmt: skip
    resp = await client.post(path, json={"confirm": slug, "cascade": True}, headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    counts = body["counts"]
    assert body == {"tenant_id": pid, "purged": True, "counts": counts}
    assert counts == {
        **expected,
        "tenants": 3,
        "closure_rows": 2 + 3 + 4,  # P, C1, G under R
        "webhook_deliveries": 3,  # P's hook, and R's and the global hook for P's event
        "events_redacted": counts["events_redacted"],
        "audit_logs_redacted": counts["audit_logs_redacted"],
    }
    assert counts["events_redacted"] >= 2  # C2's tenant.created and tenant.moved
    assert counts["audit_logs_redacted"] >= 10

    # the scanner finds what is there: the kept root's name is in its row and its events
    kept = await scan_database(db_conn, {world["root"]["name"]})
    assert {(h["table"], h["column"]) for h in kept} >= {("tenants", "name"), ("events", "payload")}
    needles = set(ids) | world["slugs"] | world["names"]
    hits = await scan_database(db_conn, needles)
    # The revision log keeps ids (never names, slugs or values) until REVISION_RETENTION_DAYS
    # has passed, so that a stream resumed later still learns which tenants were purged
    # (docs/decisions/revisions.md).
    logged = [h for h in hits if h["table"] == "context_revision_tenants"]
    assert {h["column"] for h in logged} <= {"tenant_id", "path", "left_path", "members"}
    hits = [h for h in hits if h["table"] != "context_revision_tenants"]
    outside_audit = [h for h in hits if h["table"] != "audit_logs"]
    assert outside_audit == []
    rows = await db_conn.fetch(
        "SELECT ctid::text AS row, changes FROM audit_logs WHERE ctid::text = ANY($1::text[])",
        list({h["row"] for h in hits}),
    )
    assert rows, "the purged tenants' audit entries are kept"
    assert all(r["changes"].get("redacted") is True for r in rows)
    assert {h["column"] for h in hits} <= {"tenant_id", "resource_id"}
    assert {h["needle"] for h in hits} <= set(ids), "slugs and names are nowhere"

    # the trail stays readable by id: redacted entries, the purge last
    trail = await get_json(client, f"/api/v1/audit-logs?tenant_id={pid}&limit=100", admin)
    assert trail[0]["action"] == "tenant.purged"
    assert trail[0]["changes"] == {"redacted": True, "cascade": True, "counts": counts}
    assert all(e["changes"] == {"redacted": True} for e in trail[1:])
    assert {e["action"] for e in trail} >= {"tenant.created", "tenant.updated", "consent.granted"}

    # what stays: R, O, C2 (now under R, its events without P), the delivery of C2's event
    for tenant in (world["root"], world["other"], world["moved"]):
        assert (await get_json(client, f"/api/v1/tenants/{tenant['id']}", admin))["id"]
    [moved_event] = [
        e for e in await events_of(db_conn, world["moved"]["id"]) if e["type"] == "tenant.moved"
    ]
    assert moved_event["payload"]["old_parent_id"] is None
    assert moved_event["payload"]["new_parent_id"] == world["root"]["id"]
    assert moved_event["payload"]["id"] == world["moved"]["id"]
    assert (
        await db_conn.fetchval(
            "SELECT count(*) FROM webhook_deliveries WHERE id = $1", world["kept_delivery"]
        )
        == 1
    )
    assert await tree_problems(db_conn) == []
    for tenant_id in ids:
        resp = await client.get(f"/api/v1/tenants/{tenant_id}?include_archived=true", headers=admin)
        assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": world["tenant_key"].plaintext})
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")
    # the slug is free again
    again = await create_tenant(client, admin, slug=slug)
    assert again["slug"] == slug


async def test_purge_of_an_archived_leaf_and_access_rules(client: TestClient, admin) -> None:
    root = await create_tenant(client, admin)
    mine = await create_tenant(client, admin, parent_id=root["id"])
    leaf = await create_tenant(client, admin, parent_id=mine["id"])
    child_of_leaf = await create_tenant(client, admin, parent_id=leaf["id"])
    assert (await client.delete(f"/api/v1/tenants/{child_of_leaf['id']}", headers=admin)).ok
    # an archived child still counts as a child
    resp = await client.post(
        f"/api/v1/tenants/{leaf['id']}/purge", json={"confirm": leaf["slug"]}, headers=admin
    )
    assert await error_of(resp) == (409, "HAS_CHILDREN")
    # only admins; a tenant-scoped admin inside its subtree
    writer = await key_headers(client.app, ("read", "write"))
    resp = await client.post(
        f"/api/v1/tenants/{leaf['id']}/purge", json={"confirm": leaf["slug"]}, headers=writer
    )
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    scoped = await key_headers(client.app, ("read", "admin"), tenant_id=mine["id"])
    resp = await client.post(
        f"/api/v1/tenants/{root['id']}/purge", json={"confirm": root["slug"]}, headers=scoped
    )
    assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
    resp = await client.post(
        f"/api/v1/tenants/{child_of_leaf['id']}/purge",
        json={"confirm": child_of_leaf["slug"]}, headers=scoped,
    )  # fmt: skip
    body = await resp.json()
    assert resp.status == 200, body
    assert (body["counts"]["tenants"], body["counts"]["closure_rows"]) == (1, 4)
    resp = await client.post(
        f"/api/v1/tenants/{leaf['id']}/purge", json={"confirm": leaf["slug"]}, headers=scoped
    )
    assert resp.status == 200
    children = await get_json(client, f"/api/v1/tenants/{mine['id']}/children", admin)
    assert children == []


async def test_purge_bodies_are_validated(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    path = f"/api/v1/tenants/{tenant['id']}/purge"
    for body in ({}, {"confirm": 5}, {"confirm": tenant["slug"], "cascade": "yes"},
                 {"confirm": tenant["slug"], "force": True}):  # fmt: skip
        resp = await client.post(path, json=body, headers=admin)
        assert await error_of(resp) == (400, "VALIDATION_ERROR"), body
    resp = await client.post(
        "/api/v1/tenants/00000000-0000-7000-8000-000000000000/purge",
        json={"confirm": "x"}, headers=admin,
    )  # fmt: skip
    assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
    assert (await get_json(client, f"/api/v1/tenants/{tenant['id']}", admin))["id"]


async def test_a_root_with_its_tree_can_be_purged(client: TestClient, admin, db_conn) -> None:
    root = await create_tenant(client, admin)
    kids = [await create_tenant(client, admin, parent_id=root["id"]) for _ in range(3)]
    await create_tenant(client, admin, parent_id=kids[0]["id"])
    resp = await client.post(
        f"/api/v1/tenants/{root['id']}/purge",
        json={"confirm": root["slug"], "cascade": True}, headers=admin,
    )  # fmt: skip
    body = await resp.json()
    assert resp.status == 200, body
    assert (body["counts"]["tenants"], body["counts"]["closure_rows"]) == (5, 5 + 3 + 2)
    remaining = await db_conn.fetchval(
        "SELECT count(*) FROM tenants WHERE ancestry_path LIKE $1", f"/{root['id']}%"
    )
    assert remaining == 0
    assert await tree_problems(db_conn) == []
    [entry] = await get_json(
        client, f"/api/v1/audit-logs?tenant_id={root['id']}&action=tenant.purged", admin
    )
    assert entry["resource_id"] == root["id"]
    assert UUID(entry["actor_id"])
