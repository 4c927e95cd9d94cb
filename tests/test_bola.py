"""Broken object-level authorization: a caller restricted to subtree A, holding every
scope, tries every registered endpoint against tree B (its tenants, config, permissions,
consents, webhooks, deliveries, keys, roles and audit entries) and against global
objects. Every attempt is 403 or 404, no answer carries B's data, lists show none of
it, and B is unchanged afterwards. Routes are enumerated from the app's endpoint
registry, so a route added later is attacked too (with a generic request when it has
no sample below)."""

from __future__ import annotations

import base64
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.http.appkeys import ENDPOINTS, KEYRING
from tests.conftest import ENCRYPTION_KEY, JWT_SECRET
from tests.support.api import create_tenant, unique_slug
from tests.support.gdpr import add_delivery, add_webhook, events_of
from tests.support.keys import bearer, make_key, make_token


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"SERVICE_REGIONS": "eu,us", "DEFAULT_REGION": "eu"}


@dataclass
class World:
    a: dict[str, Any]
    a1: dict[str, Any]
    b: dict[str, Any]
    b1: dict[str, Any]
    ids: dict[str, str] = field(default_factory=dict)
    # Text that only B's objects contain: no answer to the attacker may show any of it.
    markers: set[str] = field(default_factory=set)


async def build_world(client: TestClient, admin: dict[str, str], conn: Any) -> World:
    tag = uuid.uuid4().hex[:8]
    a = await create_tenant(client, admin, name=f"Alpha {tag}")
    a1 = await create_tenant(client, admin, parent_id=a["id"], name=f"Alpha kid {tag}")
    b = await create_tenant(client, admin, name=f"Bravo {tag}", metadata={"secret": f"bm-{tag}"})
    b1 = await create_tenant(client, admin, parent_id=b["id"], name=f"Bravo kid {tag}")
    world = World(a, a1, b, b1)
    bid = b1["id"]

    async def ok(method: str, path: str, body: Any = None) -> Any:
        resp = await client.request(method, path, json=body, headers=admin)
        data = await resp.json()
        assert resp.status in (200, 201), data
        return data

    await ok("PUT", f"/api/v1/tenants/{bid}/config/color", {"value": f"bv-{tag}"})
    await ok("PUT", f"/api/v1/tenants/{bid}/permissions/feature", {"value": True})
    await ok("POST", f"/api/v1/tenants/{bid}/consent", {"purpose": "marketing"})
    role = await ok("POST", "/api/v1/roles", {"name": f"bravo role {tag}", "scopes": ["read"],
                                              "tenant_id": bid})  # fmt: skip
    global_role = await ok("POST", "/api/v1/roles", {"name": f"global {tag}", "scopes": ["read"]})
    key = await make_key(client.app, ("read",), tenant_id=bid, name=f"bravo key {tag}")
    global_key = await make_key(client.app, ("read",), name=f"global key {tag}")
    hook = await add_webhook(client, conn, bid)
    global_hook = await add_webhook(client, conn, None)
    event = (await events_of(conn, bid))[-1]["id"]
    delivery = await add_delivery(conn, hook, event, status="failed")
    audit = await conn.fetchval(
        "SELECT id FROM audit_logs WHERE tenant_id = $1 ORDER BY id LIMIT 1", uuid.UUID(bid)
    )
    world.ids = {
        "tenant": bid, "root": b["id"], "role": role["id"], "global_role": global_role["id"],
        "key": str(key.key.id), "global_key": str(global_key.key.id), "webhook": str(hook),
        "global_webhook": str(global_hook), "delivery": str(delivery), "event": str(event),
        "audit": str(audit),
    }  # fmt: skip
    world.markers = {
        b["name"], b1["name"], b["slug"], b1["slug"], f"bm-{tag}", f"bv-{tag}",
        f"bravo role {tag}", f"bravo key {tag}", key.key.prefix, f"/{hook}",
        *world.ids.values(),
    }  # fmt: skip
    return world


@dataclass(frozen=True)
class Attempt:
    method: str
    route: str  # the registered path it exercises
    path: str
    body: Any = None
    list_ok: bool = False  # a list without a filter: 200, but without B's data
    # A refused batch is 400 overall (docs/api.md, Tenants); its item says why.
    batch: bool = False


def attempts(w: World) -> list[Attempt]:
    t, i = w.ids["tenant"], w.ids
    tp = f"/api/v1/tenants/{t}"
    new_key = base64.b64encode(os.urandom(32)).decode()
    tenant_routes = [
        ("GET", "", None), ("PATCH", "", {"name": "pwned"}), ("DELETE", "", None),
        ("POST", "/restore", None), ("POST", "/move", {"new_parent_id": w.a1["id"]}),
        ("GET", "/ancestors", None), ("GET", "/descendants", None), ("GET", "/children", None),
        ("GET", "/config", None), ("GET", "/config/{key}", None),
        ("PUT", "/config/{key}", {"value": "pwned"}), ("DELETE", "/config/{key}", None),
        ("GET", "/permissions", None), ("GET", "/permissions/{key}", None),
        ("PUT", "/permissions/{key}", {"value": False}), ("DELETE", "/permissions/{key}", None),
        ("GET", "/context", None), ("POST", "/consent", {"purpose": "ads"}),
        ("GET", "/consent", None), ("DELETE", "/consent/{purpose}", None),
        ("GET", "/export", None), ("POST", "/purge", {"confirm": w.b1["slug"], "cascade": True}),
        ("POST", "/migrate-region", {"region": "us"}),
    ]  # fmt: skip
    found: list[Attempt] = []
    for method, suffix, body in tenant_routes:
        key = "feature" if "permissions" in suffix else "color"
        path = tp + suffix.replace("{key}", key).replace("{purpose}", "marketing")
        found.append(Attempt(method, "/api/v1/tenants/{id}" + suffix, path, body))
    for tenant_id in (w.b["id"],):  # the other tree's root as well
        found.append(Attempt("GET", "/api/v1/tenants/{id}", f"/api/v1/tenants/{tenant_id}"))
    # my tenant into theirs
    found += [
        Attempt("POST", "/api/v1/tenants/{id}/move", f"/api/v1/tenants/{w.a1['id']}/move",
                {"new_parent_id": t}),
        Attempt("POST", "/api/v1/tenants", "/api/v1/tenants",
                {"name": "x", "slug": unique_slug(), "parent_id": t}),
        Attempt("POST", "/api/v1/tenants/batch", "/api/v1/tenants/batch",
                {"tenants": [{"name": "x", "slug": unique_slug(), "parent_id": t}]},
                batch=True),
        Attempt("POST", "/api/v1/maintenance/rotate-encryption-key",
                "/api/v1/maintenance/rotate-encryption-key",
                {"old_key": ENCRYPTION_KEY, "new_key": new_key}),
        Attempt("POST", "/api/v1/maintenance/purge-expired", "/api/v1/maintenance/purge-expired",
                {"dry_run": True}),
        Attempt("POST", "/api/v1/api-keys", "/api/v1/api-keys", {"name": "x", "tenant_id": t}),
        Attempt("POST", "/api/v1/roles", "/api/v1/roles",
                {"name": "x", "scopes": ["read"], "tenant_id": t}),
        Attempt("POST", "/api/v1/webhooks", "/api/v1/webhooks",
                {"url": "https://93.184.216.34/hook", "events": ["tenant.created"],
                 "tenant_id": t}),
        Attempt("POST", "/api/v1/webhooks/deliveries/retry-all",
                f"/api/v1/webhooks/deliveries/retry-all?webhook_id={i['webhook']}"),
        Attempt("POST", "/api/v1/webhooks/deliveries/{deliveryId}/retry",
                f"/api/v1/webhooks/deliveries/{i['delivery']}/retry"),
    ]  # fmt: skip
    for which in ("key", "global_key"):
        kp = f"/api/v1/api-keys/{i[which]}"
        found += [
            Attempt("GET", "/api/v1/api-keys/{id}", kp),
            Attempt("PATCH", "/api/v1/api-keys/{id}", kp, {"name": "pwned"}),
            Attempt("DELETE", "/api/v1/api-keys/{id}", kp),
            Attempt("POST", "/api/v1/api-keys/{id}/rotate", kp + "/rotate", {}),
            Attempt("PUT", "/api/v1/api-keys/{id}/role", kp + "/role", {"role_id": i["role"]}),
            Attempt("DELETE", "/api/v1/api-keys/{id}/role", kp + "/role"),
            Attempt("GET", "/api/v1/api-keys/{id}/scopes", kp + "/scopes"),
        ]
    for which in ("role", "global_role"):
        rp = f"/api/v1/roles/{i[which]}"
        found += [
            Attempt("GET", "/api/v1/roles/{id}", rp),
            Attempt("PATCH", "/api/v1/roles/{id}", rp, {"name": "pwned"}),
            Attempt("DELETE", "/api/v1/roles/{id}", rp),
        ]
    for which in ("webhook", "global_webhook"):
        wp = f"/api/v1/webhooks/{i[which]}"
        found += [
            Attempt("GET", "/api/v1/webhooks/{id}", wp),
            Attempt("PATCH", "/api/v1/webhooks/{id}", wp, {"description": "pwned"}),
            Attempt("DELETE", "/api/v1/webhooks/{id}", wp),
            Attempt("POST", "/api/v1/webhooks/{id}/test", wp + "/test"),
            Attempt("POST", "/api/v1/webhooks/{id}/rotate-secret", wp + "/rotate-secret"),
            Attempt("GET", "/api/v1/webhooks/{id}/deliveries", wp + "/deliveries"),
        ]
    found.append(Attempt("GET", "/api/v1/audit-logs/{id}", f"/api/v1/audit-logs/{i['audit']}"))
    # filtered lists naming B
    for route, query in (
        ("/api/v1/tenants", f"parent_id={t}"), ("/api/v1/webhooks", f"tenant_id={t}"),
        ("/api/v1/api-keys", f"tenant_id={t}"), ("/api/v1/roles", f"tenant_id={t}"),
        ("/api/v1/audit-logs", f"tenant_id={t}"),
        ("/api/v1/webhooks/deliveries/stats", f"webhook_id={i['webhook']}"),
        ("/api/v1/webhooks/deliveries/failed", f"webhook_id={i['webhook']}"),
    ):  # fmt: skip
        found.append(Attempt("GET", route, f"{route}?{query}"))
    # plain lists: allowed, but nothing of B in them
    for route, query in (
        ("/api/v1/tenants", "status=all"), ("/api/v1/webhooks", ""), ("/api/v1/api-keys", ""),
        ("/api/v1/api-keys/dormant", "days=1"), ("/api/v1/roles", ""),
        ("/api/v1/audit-logs", "limit=100"), ("/api/v1/webhooks/deliveries/stats", ""),
        ("/api/v1/webhooks/deliveries/failed", ""), ("/api/v1/regions", ""),
        ("/api/v1/me", ""),  # the caller's own credential
        ("/api/v1/change-requests", ""),
    ):  # fmt: skip
        found.append(Attempt("GET", route, f"{route}?{query}" if query else route, list_ok=True))
    found.append(
        Attempt("POST", "/api/v1/webhooks/deliveries/retry-all",
                "/api/v1/webhooks/deliveries/retry-all", list_ok=True)
    )  # fmt: skip
    return found


def generic_attempt(method: str, route: str, w: World) -> Attempt:
    """A route without a sample (added later): B's ids in every path parameter."""
    by_name = {"id": w.ids["tenant"], "deliveryId": w.ids["delivery"], "key": "color",
               "purpose": "marketing"}  # fmt: skip
    if route.startswith("/api/v1/webhooks/{id}"):
        by_name["id"] = w.ids["webhook"]
    elif route.startswith("/api/v1/api-keys/{id}"):
        by_name["id"] = w.ids["key"]
    elif route.startswith("/api/v1/roles/{id}"):
        by_name["id"] = w.ids["role"]
    elif route.startswith("/api/v1/audit-logs/{id}"):
        by_name["id"] = w.ids["audit"]
    path = re.sub(r"\{([^}]+)\}", lambda m: by_name.get(m[1], w.ids["tenant"]), route)
    return Attempt(method, route, path, {} if method in ("POST", "PUT", "PATCH") else None)


SNAPSHOT = {
    "tenants": "SELECT * FROM tenants WHERE ancestry_path LIKE $1 ORDER BY id",
    "config": "SELECT c.* FROM config_entries c JOIN tenants t ON t.id = c.tenant_id "
    "WHERE t.ancestry_path LIKE $1 ORDER BY c.key",
    "permissions": "SELECT p.* FROM permission_policies p JOIN tenants t ON t.id = p.tenant_id "
    "WHERE t.ancestry_path LIKE $1 ORDER BY p.key",
    "consents": "SELECT c.* FROM consents c JOIN tenants t ON t.id = c.tenant_id "
    "WHERE t.ancestry_path LIKE $1 ORDER BY c.id",
    "webhooks": "SELECT * FROM webhooks ORDER BY id",
    "deliveries": "SELECT id, status, attempts FROM webhook_deliveries ORDER BY id",
    # not last_used_at: the attacker's own key records its use
    "keys": "SELECT id, name, scopes, role_id, revoked_at, tenant_id FROM api_keys ORDER BY id",
    "roles": "SELECT * FROM roles ORDER BY id",
}


async def snapshot(conn: asyncpg.Connection, world: World) -> dict[str, list[Any]]:
    prefix = f"/{world.b['id']}%"
    taken: dict[str, list[Any]] = {}
    for name, sql in SNAPSHOT.items():
        args = (prefix,) if "$1" in sql else ()
        taken[name] = [dict(r) for r in await conn.fetch(sql, *args)]
    return taken


@pytest.mark.parametrize("kind", ["api_key", "jwt"])
async def test_a_scoped_caller_reaches_nothing_outside_its_subtree(
    client: TestClient, admin, db_conn, kind: str
) -> None:
    world = await build_world(client, admin, db_conn)
    if kind == "api_key":
        issued = await make_key(client.app, ("read", "write", "admin"), tenant_id=world.a["id"])
        attacker = {"X-API-Key": issued.plaintext}
    else:
        token = make_token(JWT_SECRET, scopes="read write admin", tenant_id=world.a["id"])
        attacker = bearer(token)
    before = await snapshot(db_conn, world)
    keyring_before = client.app[KEYRING].encryptor.key
    planned = attempts(world)
    registered = {(e.method, e.path) for e in client.app[ENDPOINTS].values() if not e.public}
    covered = {(a.method, a.route) for a in planned}
    planned += [generic_attempt(m, r, world) for m, r in sorted(registered - covered)]
    unknown = covered - registered
    assert not unknown, f"samples for routes that do not exist: {unknown}"
    failures: list[str] = []
    for attempt in planned:
        resp = await client.request(
            attempt.method, attempt.path, json=attempt.body, headers=attacker
        )
        text = await resp.text()
        leaked = sorted(m for m in world.markers if m in text)
        sample = (attempt.method, attempt.route) in covered
        if attempt.list_ok:
            ok = resp.status == 200 and not leaked
        elif attempt.batch:
            ok = resp.status == 400 and not leaked and '"code":"TENANT_NOT_FOUND"' in text
        elif sample:
            ok = resp.status in (403, 404) and not leaked
        else:  # a generic request may also fail validation first; never succeed or leak
            ok = 400 <= resp.status < 500 and resp.status not in (401, 429) and not leaked
        if not ok:
            failures.append(
                f"{attempt.method} {attempt.path} -> {resp.status} {leaked} {text[:200]}"
            )
    assert failures == []
    assert {(a.method, a.route) for a in planned} >= registered
    assert await snapshot(db_conn, world) == before, "B changed"
    assert client.app[KEYRING].encryptor.key == keyring_before, "the encryption key changed"
    # the attacker's own subtree still works: the refusals above were about B only
    resp = await client.get(f"/api/v1/tenants/{world.a1['id']}", headers=attacker)
    assert resp.status == 200
