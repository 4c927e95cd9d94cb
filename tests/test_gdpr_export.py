"""GDPR export: one attachment with everything about a tenant, secrets masked or left out."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import orjson
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.gdpr import (
    add_permission,
    add_role,
    add_sensitive_config,
    add_webhook,
    assign_role,
    error_of,
)
from tests.support.keys import key_headers, make_key

WEBHOOK_SECRET = "whsec_export-test-secret-value"
DB_PASSWORD = "hunter2-very-secret"


async def build_tenant(client: TestClient, admin: dict[str, str], db_conn: Any) -> dict[str, Any]:
    root = await create_tenant(client, admin)
    slug = unique_slug("exp")
    tenant = await create_tenant(
        client, admin, parent_id=root["id"], name="Export Me", slug=slug,
        config={"theme": "dark"}, metadata={"plan": "pro"},
    )  # fmt: skip
    tid = tenant["id"]
    await add_sensitive_config(client, admin, tid, "db_password", {"pw": DB_PASSWORD})
    await add_permission(client, admin, tid, "billing.view", True, "LOCKED")
    role_id = await add_role(client, admin, tid, "auditors")
    webhook_id = await add_webhook(client, db_conn, tid, secret=WEBHOOK_SECRET)
    key = await make_key(client.app, ("read",), tenant_id=tid, name="tenant key")
    await assign_role(client, admin, key.key.id, role_id)
    resp = await client.post(
        f"/api/v1/tenants/{tid}/consent", json={"purpose": "analytics"}, headers=admin
    )
    consent = await resp.json()
    child = await create_tenant(client, admin, parent_id=tid, name="Kid")
    archived = await create_tenant(client, admin, parent_id=tid, name="Old kid")
    assert (await client.delete(f"/api/v1/tenants/{archived['id']}", headers=admin)).status == 204
    return {
        "tenant": tenant, "key": key, "role_id": role_id, "webhook_id": webhook_id,
        "consent": consent, "children": [child, archived], "root": root,
    }  # fmt: skip


async def test_export_holds_everything_with_secrets_masked(client: TestClient, admin, db_conn):
    world = await build_tenant(client, admin, db_conn)
    tid = world["tenant"]["id"]
    resp = await client.get(f"/api/v1/tenants/{tid}/export", headers=admin)
    raw = await resp.read()
    assert resp.status == 200, raw
    assert resp.headers["Content-Type"].startswith("application/json")
    slug = world["tenant"]["slug"]
    assert (
        resp.headers["Content-Disposition"] == f'attachment; filename="tenant-{slug}-export.json"'
    )
    assert resp.headers["Cache-Control"] == "no-store"
    doc = orjson.loads(raw)
    assert set(doc) == {
        "format_version", "exported_at", "tenant", "config", "permissions", "consents",
        "audit_logs", "webhooks", "api_keys", "roles", "children",
    }  # fmt: skip
    assert doc["format_version"] == 1
    current = await get_json(client, f"/api/v1/tenants/{tid}", admin)
    assert doc["tenant"] == current
    assert doc["tenant"]["config"] == {"db_password": "***", "theme": "dark"}
    assert [(c["key"], c["value"], c["sensitive"], c["locked"]) for c in doc["config"]] == [
        ("db_password", "***", True, False),
        ("theme", "dark", False, False),
    ]
    [permission] = doc["permissions"]
    assert permission == {
        "key": "billing.view", "value": True, "mode": "LOCKED",
        "created_at": permission["created_at"], "updated_at": permission["updated_at"],
    }  # fmt: skip
    assert doc["consents"] == [world["consent"]]
    # the tenant's whole audit trail, newest first, exactly what the audit API answers
    trail = await get_json(client, f"/api/v1/audit-logs?tenant_id={tid}&limit=100", admin)
    assert doc["audit_logs"] == trail[1:]  # trail[0] is the tenant.exported entry itself
    assert [e["action"] for e in doc["audit_logs"]][::-1] == [
        "tenant.created", "config.updated", "permission.created", "role.created",
        "api_key.created", "role.assigned", "consent.granted",
    ]  # fmt: skip
    [webhook] = doc["webhooks"]
    assert webhook == {
        "id": str(world["webhook_id"]), "url": f"https://hooks.example.com/{world['webhook_id']}",
        "tenant_id": tid, "events": ["tenant.updated", "tenant.moved"],
        "description": "test hook", "active": True, "include_descendants": False,
        "created_at": webhook["created_at"], "updated_at": webhook["updated_at"],
    }  # fmt: skip
    [key] = doc["api_keys"]
    issued = world["key"]
    assert key["id"] == str(issued.key.id)
    assert key["prefix"] == issued.plaintext[:12]
    assert key["role_id"] == str(world["role_id"])
    assert key["effective_scopes"] == ["read"]
    assert "key_hash" not in key
    assert "plaintext_key" not in key
    assert [r["name"] for r in doc["roles"]] == ["auditors"]
    assert doc["children"] == [
        {"id": c["id"], "slug": c["slug"], "name": c["name"], "status": s}
        for c, s in zip(world["children"], ("active", "archived"), strict=True)
    ]
    # nothing secret anywhere in the document
    stored = await db_conn.fetchrow(
        "SELECT w.encrypted_secret, k.key_hash, c.encrypted_value FROM webhooks w, api_keys k, "
        "config_entries c WHERE w.id = $1 AND k.id = $2 AND c.tenant_id = $3 AND c.sensitive",
        world["webhook_id"], issued.key.id, UUID(tid),
    )  # fmt: skip
    text = raw.decode()
    for secret in (
        WEBHOOK_SECRET, DB_PASSWORD, issued.plaintext, stored["key_hash"].hex(),
        stored["encrypted_secret"], stored["encrypted_value"], "secret", "hash",
    ):  # fmt: skip
        assert secret not in text, secret
    # the export is audited
    assert trail[0]["action"] == "tenant.exported"
    assert trail[0]["changes"] == {"include_secrets": False}


async def test_include_secrets_reveals_sensitive_config_only(client: TestClient, admin, db_conn):
    world = await build_tenant(client, admin, db_conn)
    tid = world["tenant"]["id"]
    resp = await client.get(f"/api/v1/tenants/{tid}/export?include_secrets=true", headers=admin)
    doc = await resp.json()
    assert resp.status == 200, doc
    assert doc["tenant"]["config"] == {"db_password": {"pw": DB_PASSWORD}, "theme": "dark"}
    assert doc["config"][0]["value"] == {"pw": DB_PASSWORD}
    text = orjson.dumps(doc).decode()
    assert WEBHOOK_SECRET not in text
    assert world["key"].plaintext not in text
    [entry] = await get_json(
        client, f"/api/v1/audit-logs?tenant_id={tid}&action=tenant.exported", admin
    )
    assert entry["changes"] == {"include_secrets": True}


async def test_archived_tenants_export_and_access_rules(client: TestClient, admin) -> None:
    root = await create_tenant(client, admin)
    mine = await create_tenant(client, admin, parent_id=root["id"])
    leaf = await create_tenant(client, admin, parent_id=mine["id"], name="Archived leaf")
    assert (await client.delete(f"/api/v1/tenants/{leaf['id']}", headers=admin)).status == 204
    doc = await get_json(client, f"/api/v1/tenants/{leaf['id']}/export", admin)
    assert doc["tenant"]["status"] == "archived"
    assert doc["tenant"]["name"] == "Archived leaf"
    # admin only: read and write are not enough
    writer = await key_headers(client.app, ("read", "write"))
    resp = await client.get(f"/api/v1/tenants/{mine['id']}/export", headers=writer)
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    # a tenant-scoped admin exports inside its subtree only
    scoped = await key_headers(client.app, ("read", "admin"), tenant_id=mine["id"])
    assert (await client.get(f"/api/v1/tenants/{leaf['id']}/export", headers=scoped)).status == 200
    resp = await client.get(f"/api/v1/tenants/{root['id']}/export", headers=scoped)
    assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
    resp = await client.get(f"/api/v1/tenants/{mine['id']}/export?include_secret=1", headers=admin)
    assert await error_of(resp) == (400, "VALIDATION_ERROR")
