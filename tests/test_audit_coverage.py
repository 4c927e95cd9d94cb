"""Every mutating (or audited) endpoint leaves exactly one audit entry (one per changed
resource: a rotation also records the new key), with the right action, actor and
resource, in the same request.

One row per endpoint. Another area adds its endpoints as more rows: a row names the
request (paths and bodies may use the world's values) and the entry it must leave.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import ENCRYPTION_KEY
from tests.support.api import create_tenant, unique_slug
from tests.support.gdpr import add_delivery, events_of
from tests.support.keys import make_key
from tests.support.processes import free_port

World = dict[str, Any]
Value = Callable[[World, Any], Any]


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # str.format(**world): {tenant}, {leaf}, {archived}, {root} are tenant ids
    action: str
    resource_type: str
    resource_id: Value  # (world, response body) -> the expected resource_id
    tenant_id: Value  # (world, response body) -> the expected tenant_id
    body: Callable[[World], Any] | None = None
    status: int = 200
    # Other resources the same request changes, each with its own entry (as batch create
    # writes one per tenant): their actions.
    also: tuple[str, ...] = ()


def world_id(name: str) -> Value:
    return lambda world, _: world[name]


def body_id(world: World, body: Any) -> Any:
    return body["id"]


def nothing(world: World, body: Any) -> None:
    return None


def const(value: str) -> Value:
    return lambda world, _: value


CASES = [
    Case("POST", "/api/v1/tenants", "tenant.created", "tenant", body_id, body_id,
         body=lambda w: {"name": "New", "slug": unique_slug(), "parent_id": w["tenant"]},
         status=201),
    Case("POST", "/api/v1/tenants/batch", "tenant.created", "tenant",
         lambda w, b: b["created"][0]["id"], lambda w, b: b["created"][0]["id"],
         body=lambda w: {"tenants": [{"name": "B", "slug": unique_slug(), "parent_id": w["leaf"]}]},
         status=201),
    Case("PATCH", "/api/v1/tenants/{tenant}", "tenant.updated", "tenant",
         world_id("tenant"), world_id("tenant"), body=lambda w: {"name": "Renamed"}),
    Case("DELETE", "/api/v1/tenants/{leaf}", "tenant.deleted", "tenant",
         world_id("leaf"), world_id("leaf"), status=204),
    Case("POST", "/api/v1/tenants/{archived}/restore", "tenant.restored", "tenant",
         world_id("archived"), world_id("archived")),
    Case("POST", "/api/v1/tenants/{leaf}/move", "tenant.moved", "tenant",
         world_id("leaf"), world_id("leaf"), body=lambda w: {"new_parent_id": w["root"]}),
    Case("POST", "/api/v1/tenants/{tenant}/consent", "consent.granted", "consent",
         body_id, world_id("tenant"), body=lambda w: {"purpose": "analytics"}, status=201),
    Case("DELETE", "/api/v1/tenants/{tenant}/consent/newsletter", "consent.revoked", "consent",
         world_id("consent"), world_id("tenant"), status=204),
    Case("GET", "/api/v1/tenants/{tenant}/export", "tenant.exported", "tenant",
         world_id("tenant"), world_id("tenant")),
    Case("POST", "/api/v1/tenants/{leaf}/purge", "tenant.purged", "tenant",
         world_id("leaf"), world_id("leaf"), body=lambda w: {"confirm": w["leaf_slug"]}),
    Case("POST", "/api/v1/tenants/{tenant}/migrate-region", "tenant.region_migrated", "tenant",
         world_id("tenant"), world_id("tenant"), body=lambda w: {"region": "eu-2"}),
    Case("POST", "/api/v1/maintenance/purge-expired", "maintenance.purge_expired", "maintenance",
         nothing, nothing, body=lambda w: {}),
    # config, permissions and encryption keys (issue 4)
    Case("PUT", "/api/v1/tenants/{tenant}/config/color", "config.updated", "config_entry",
         const("color"), world_id("tenant"), body=lambda w: {"value": "red"}, status=201),
    Case("PUT", "/api/v1/tenants/{tenant}/config/theme", "config.updated", "config_entry",
         const("theme"), world_id("tenant"), body=lambda w: {"value": "light"}),
    Case("DELETE", "/api/v1/tenants/{tenant}/config/theme", "config.deleted", "config_entry",
         const("theme"), world_id("tenant"), status=204),
    Case("PUT", "/api/v1/tenants/{tenant}/permissions/export", "permission.created",
         "permission_policy", const("export"), world_id("tenant"),
         body=lambda w: {"value": True}, status=201),
    Case("PUT", "/api/v1/tenants/{tenant}/permissions/billing", "permission.updated",
         "permission_policy", const("billing"), world_id("tenant"),
         body=lambda w: {"value": True}),
    Case("DELETE", "/api/v1/tenants/{tenant}/permissions/billing", "permission.deleted",
         "permission_policy", const("billing"), world_id("tenant"), status=204),
    # value schemas and budgets of config keys
    Case("PUT", "/api/v1/tenants/{tenant}/config-schemas/size", "config_schema.declared",
         "config_schema", const("size"), world_id("tenant"),
         body=lambda w: {"schema": {"type": "integer"}}, status=201),
    Case("DELETE", "/api/v1/tenants/{tenant}/config-schemas/theme", "config_schema.deleted",
         "config_schema", const("theme"), world_id("tenant"), status=204),
    Case("PUT", "/api/v1/tenants/{tenant}/config-budgets/quota", "config_budget.declared",
         "config_budget", const("quota"), world_id("tenant"), body=lambda w: {}, status=201),
    Case("DELETE", "/api/v1/tenants/{tenant}/config-budgets/seats", "config_budget.deleted",
         "config_budget", const("seats"), world_id("tenant"), status=204),
    Case("POST", "/api/v1/maintenance/rotate-encryption-key",
         "maintenance.encryption_key_rotated", "encryption_key", nothing, nothing,
         body=lambda w: {"old_key": ENCRYPTION_KEY,
                         "new_key": base64.b64encode(secrets.token_bytes(32)).decode()}),
    # API keys and roles (issue 3)
    Case("POST", "/api/v1/api-keys", "api_key.created", "api_key", body_id, world_id("tenant"),
         body=lambda w: {"name": "made", "tenant_id": w["tenant"]}, status=201),
    Case("PATCH", "/api/v1/api-keys/{key}", "api_key.updated", "api_key",
         world_id("key"), world_id("tenant"), body=lambda w: {"name": "renamed"}),
    Case("DELETE", "/api/v1/api-keys/{key}", "api_key.revoked", "api_key",
         world_id("key"), world_id("tenant"), status=204),
    Case("POST", "/api/v1/api-keys/{key}/rotate", "api_key.rotated", "api_key",
         world_id("key"), world_id("tenant"), body=lambda w: {}, status=201,
         also=("api_key.created",)),
    Case("PUT", "/api/v1/api-keys/{key}/role", "role.assigned", "api_key",
         world_id("key"), world_id("tenant"), body=lambda w: {"role_id": w["role"]}),
    Case("DELETE", "/api/v1/api-keys/{role_key}/role", "role.removed", "api_key",
         world_id("role_key"), world_id("tenant")),
    Case("POST", "/api/v1/roles", "role.created", "role", body_id, world_id("tenant"),
         body=lambda w: {"name": "made", "scopes": ["read"], "tenant_id": w["tenant"]},
         status=201),
    Case("PATCH", "/api/v1/roles/{role}", "role.updated", "role",
         world_id("role"), world_id("tenant"), body=lambda w: {"description": "changed"}),
    Case("DELETE", "/api/v1/roles/{role}", "role.deleted", "role",
         world_id("role"), world_id("tenant"), status=204),
    # webhooks and deliveries (issue 5)
    Case("POST", "/api/v1/webhooks", "webhook.created", "webhook", body_id, world_id("tenant"),
         body=lambda w: {"url": w["hook_url"], "events": ["tenant.moved"],
                         "tenant_id": w["tenant"]}, status=201),
    Case("PATCH", "/api/v1/webhooks/{webhook}", "webhook.updated", "webhook",
         world_id("webhook"), world_id("tenant"), body=lambda w: {"description": "changed"}),
    Case("POST", "/api/v1/webhooks/{webhook}/rotate-secret", "webhook.updated", "webhook",
         world_id("webhook"), world_id("tenant")),
    Case("POST", "/api/v1/webhooks/{webhook}/test", "webhook.tested", "webhook",
         world_id("webhook"), world_id("tenant")),
    Case("DELETE", "/api/v1/webhooks/{webhook}", "webhook.deleted", "webhook",
         world_id("webhook"), world_id("tenant"), status=204),
    Case("POST", "/api/v1/webhooks/deliveries/{delivery}/retry", "delivery.retried", "delivery",
         world_id("delivery"), world_id("tenant")),
    Case("POST", "/api/v1/webhooks/deliveries/retry-all", "delivery.retried", "delivery",
         nothing, nothing),
    Case("POST", "/api/v1/tenants/{leaf}/protect", "tenant.protected", "tenant",
         world_id("leaf"), world_id("leaf")),
    # The preview runs the changes and rolls them back: only the request's own entry.
    Case("POST", "/api/v1/change-requests", "change_request.created", "change_request",
         body_id, world_id("tenant"), status=201,
         body=lambda w: {"title": "t", "changes": [
             {"op": "config.set", "tenant_id": w["tenant"], "key": "theme", "value": "light"}]}),
]  # fmt: skip


@pytest.fixture
def settings_env() -> dict[str, str]:
    # Webhooks may target loopback over http: the receiver is a closed local port.
    return {
        "SERVICE_REGIONS": "default,eu-2",
        "WEBHOOK_ALLOW_HTTP": "true",
        "WEBHOOK_ALLOWED_PRIVATE_CIDRS": "127.0.0.1/32",
    }


async def make_world(client: TestClient, headers: dict[str, str], conn: Any) -> World:
    root = await create_tenant(client, headers)
    tenant = await create_tenant(client, headers, parent_id=root["id"], config={"theme": "dark"})
    leaf = await create_tenant(client, headers, parent_id=tenant["id"])
    resp = await client.put(
        f"/api/v1/tenants/{tenant['id']}/permissions/billing", json={"value": False},
        headers=headers,
    )  # fmt: skip
    assert resp.status == 201
    archived = await create_tenant(client, headers, parent_id=tenant["id"])
    assert (await client.delete(f"/api/v1/tenants/{archived['id']}", headers=headers)).ok
    for path, body in (
        ("config-schemas/theme", {"schema": {"type": "string"}}),
        ("config-budgets/seats", {}),
    ):
        resp = await client.put(
            f"/api/v1/tenants/{tenant['id']}/{path}", json=body, headers=headers
        )
        assert resp.status == 201, await resp.json()
    resp = await client.post(
        f"/api/v1/tenants/{tenant['id']}/consent", json={"purpose": "newsletter"}, headers=headers
    )
    consent = await resp.json()
    resp = await client.post(
        "/api/v1/roles", json={"name": "viewers", "scopes": ["read"], "tenant_id": tenant["id"]},
        headers=headers,
    )  # fmt: skip
    role = await resp.json()
    keys = []
    for name in ("plain", "with role"):
        resp = await client.post(
            "/api/v1/api-keys", json={"name": name, "tenant_id": tenant["id"]}, headers=headers
        )
        keys.append(await resp.json())
    resp = await client.put(
        f"/api/v1/api-keys/{keys[1]['id']}/role", json={"role_id": role["id"]}, headers=headers
    )
    assert resp.status == 200
    hook_url = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens: attempts fail fast
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": hook_url, "events": ["tenant.moved"], "tenant_id": tenant["id"]},
        headers=headers,
    )
    webhook = await resp.json()
    assert resp.status == 201, webhook
    event_id = (await events_of(conn, tenant["id"]))[-1]["id"]
    delivery = await add_delivery(conn, UUID(webhook["id"]), event_id, status="failed")
    return {
        "root": root["id"], "tenant": tenant["id"], "leaf": leaf["id"],
        "leaf_slug": leaf["slug"], "archived": archived["id"], "consent": consent["id"],
        "role": role["id"], "key": keys[0]["id"], "role_key": keys[1]["id"],
        "hook_url": hook_url, "webhook": webhook["id"], "delivery": str(delivery),
    }  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[f"{c.method} {c.path}" for c in CASES])
async def test_each_mutating_endpoint_leaves_exactly_one_entry(
    client: TestClient, db_conn: Any, case: Case
) -> None:
    issued = await make_key(client.app, name="audited caller")
    headers = {"X-API-Key": issued.plaintext}
    world = await make_world(client, headers, db_conn)
    request_id = f"audit-{unique_slug()}"
    resp = await client.request(
        case.method,
        case.path.format(**world),
        json=None if case.body is None else case.body(world),
        headers={**headers, "X-Request-ID": request_id},
    )
    body = None if resp.status == 204 else await resp.json()
    assert resp.status == case.status, body
    rows = await db_conn.fetch(
        "SELECT * FROM audit_logs WHERE request_id = $1 ORDER BY id", request_id
    )
    assert sorted(r["action"] for r in rows) == sorted([case.action, *case.also])
    [entry] = [r for r in rows if r["action"] == case.action]
    expected_tenant = case.tenant_id(world, body)
    assert {
        "action": entry["action"],
        "resource_type": entry["resource_type"],
        "resource_id": entry["resource_id"],
        "tenant_id": None if entry["tenant_id"] is None else str(entry["tenant_id"]),
        "actor_id": entry["actor_id"],
        "actor_type": entry["actor_type"],
        "ip_address": entry["ip_address"],
    } == {
        "action": case.action,
        "resource_type": case.resource_type,
        "resource_id": case.resource_id(world, body),
        "tenant_id": expected_tenant,
        "actor_id": str(issued.key.id),
        "actor_type": "api_key",
        "ip_address": "127.0.0.1",
    }


async def test_reads_and_refused_changes_leave_no_entry(client: TestClient, db_conn) -> None:
    issued = await make_key(client.app, name="reader")
    headers = {"X-API-Key": issued.plaintext}
    world = await make_world(client, headers, db_conn)
    request_id = f"quiet-{unique_slug()}"
    quiet = {**headers, "X-Request-ID": request_id}
    tenant = world["tenant"]
    for method, path, body in (
        ("GET", f"/api/v1/tenants/{tenant}", None),
        ("GET", "/api/v1/tenants", None),
        ("GET", f"/api/v1/tenants/{tenant}/consent", None),
        ("GET", "/api/v1/audit-logs", None),
        ("GET", "/api/v1/regions", None),
        ("POST", "/api/v1/maintenance/purge-expired", {"dry_run": True}),
        ("POST", f"/api/v1/tenants/{tenant}/consent", {"purpose": "newsletter"}),  # 200: active
        ("PATCH", f"/api/v1/tenants/{tenant}", {"name": "x" * 300}),  # 400
        ("POST", f"/api/v1/tenants/{tenant}/purge", {"confirm": "not-the-slug"}),  # 400
        ("POST", f"/api/v1/tenants/{tenant}/migrate-region", {"region": "default"}),  # 409
        ("DELETE", f"/api/v1/tenants/{tenant}/consent/never-given", None),  # 404
    ):
        resp = await client.request(method, path, json=body, headers=quiet)
        assert resp.status < 500, (method, path)
    count = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE request_id = $1", request_id
    )
    assert count == 0
