"""Protected subtrees: direct writes at a protected tenant or below answer 409
CHANGE_REQUEST_REQUIRED; unprotected trees work as before; protect and unprotect are
admin operations, audited and evented."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant
from tests.support.keys import key_headers


async def _status(client: TestClient, method: str, url: str, headers: dict[str, str],
                  body: Any = None) -> tuple[int, str | None]:  # fmt: skip
    resp = await client.request(method, url, json=body, headers=headers)
    data = await resp.json() if resp.status != 204 else None
    return resp.status, (data or {}).get("error", {}).get("code") if data else None


async def test_protected_subtrees_refuse_direct_writes(
    client: TestClient, admin: dict[str, str], db_conn: asyncpg.Connection
) -> None:
    root = await create_tenant(client, admin)
    protected = await create_tenant(client, admin, parent_id=root["id"])
    child = await create_tenant(client, admin, parent_id=protected["id"])
    leaf = await create_tenant(client, admin, parent_id=child["id"])
    outside = await create_tenant(client, admin, parent_id=root["id"])
    archived = await create_tenant(client, admin, parent_id=child["id"])
    assert (await client.delete(f"/api/v1/tenants/{archived['id']}", headers=admin)).status == 204
    await client.put(f"/api/v1/tenants/{child['id']}/config/k", json={"value": 1}, headers=admin)
    await client.put(
        f"/api/v1/tenants/{child['id']}/permissions/p", json={"value": True}, headers=admin
    )

    writer = await key_headers(client.app, ("read", "write"))
    resp = await client.post(f"/api/v1/tenants/{protected['id']}/protect", headers=writer)
    assert resp.status == 403
    resp = await client.post(f"/api/v1/tenants/{protected['id']}/protect", headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["tenant_id"] == protected["id"]
    assert body["protected"] is True

    base = "/api/v1/tenants"
    refused = [
        ("PUT", f"{base}/{child['id']}/config/k", {"value": 2}),
        ("PUT", f"{base}/{protected['id']}/config/n", {"value": 2}),
        ("DELETE", f"{base}/{child['id']}/config/k", None),
        ("PUT", f"{base}/{leaf['id']}/permissions/p", {"value": False}),
        ("DELETE", f"{base}/{child['id']}/permissions/p", None),
        ("PATCH", f"{base}/{leaf['id']}", {"name": "renamed"}),
        ("POST", f"{base}/{leaf['id']}/move", {"new_parent_id": outside["id"]}),
        ("POST", f"{base}/{outside['id']}/move", {"new_parent_id": child["id"]}),
        ("DELETE", f"{base}/{leaf['id']}", None),
        ("POST", f"{base}/{archived['id']}/restore", None),
    ]
    for method, url, payload in refused:
        assert await _status(client, method, url, admin, payload) == (
            409,
            "CHANGE_REQUEST_REQUIRED",
        ), (method, url)
    # Outside the protected subtree (the root above it included) nothing changes.
    allowed = [
        ("PUT", f"{base}/{outside['id']}/config/k", {"value": 2}, 201),
        ("PUT", f"{base}/{root['id']}/config/k", {"value": 2}, 201),
        ("PATCH", f"{base}/{outside['id']}", {"name": "renamed"}, 200),
    ]
    for method, url, payload, status in allowed:
        assert (await _status(client, method, url, admin, payload))[0] == status, (method, url)

    resp = await client.post(f"/api/v1/tenants/{protected['id']}/unprotect", headers=admin)
    assert resp.status == 204
    assert (await _status(client, "PUT", f"{base}/{child['id']}/config/k", admin, {"value": 3}))[
        0
    ] == 200
    audit = await db_conn.fetch(
        "SELECT action, changes FROM audit_logs WHERE tenant_id = $1"
        " AND action LIKE 'tenant.%protected' ORDER BY created_at",
        UUID(protected["id"]),
    )
    assert [a["action"] for a in audit] == ["tenant.protected", "tenant.unprotected"]
    events = await db_conn.fetch(
        "SELECT type FROM events WHERE tenant_id = $1 AND type LIKE 'tenant.%protected'"
        " ORDER BY id",
        UUID(protected["id"]),
    )
    assert [e["type"] for e in events] == ["tenant.protected", "tenant.unprotected"]


async def test_protecting_twice_keeps_the_first_mark(
    client: TestClient, admin: dict[str, str], db_conn: asyncpg.Connection
) -> None:
    root = await create_tenant(client, admin)
    first = await (await client.post(f"/api/v1/tenants/{root['id']}/protect", headers=admin)).json()
    again = await (await client.post(f"/api/v1/tenants/{root['id']}/protect", headers=admin)).json()
    assert first == again
    count = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE tenant_id = $1 AND action = 'tenant.protected'",
        UUID(root["id"]),
    )
    assert count == 1


async def test_protection_is_refused_before_an_ancestors_lock(
    client: TestClient, admin: dict[str, str]
) -> None:
    """A config PUT reads the protection, the ancestors' lock of the key and the entry in
    one statement; the answers keep their order: protection first, then the lock, and an
    unchanged value is still no change."""
    base = "/api/v1/tenants"
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    put = ("PUT", f"{base}/{child['id']}/config/k")
    body = {"value": 1, "locked": True}
    assert (await _status(client, *put, admin, {"value": 1}))[0] == 201
    assert (await _status(client, *put, admin, {"value": 1}))[0] == 200
    assert (await _status(client, "PUT", f"{base}/{root['id']}/config/k", admin, body))[0] == 201
    assert await _status(client, *put, admin, {"value": 2}) == (409, "CONFIG_LOCKED")
    assert (await client.post(f"{base}/{child['id']}/protect", headers=admin)).status == 200
    assert await _status(client, *put, admin, {"value": 2}) == (409, "CHANGE_REQUEST_REQUIRED")
    assert (await client.post(f"{base}/{child['id']}/unprotect", headers=admin)).status == 204
    assert await _status(client, *put, admin, {"value": 2}) == (409, "CONFIG_LOCKED")
