"""Permission policy endpoints: CRUD, the three modes, PERMISSION_LOCKED, events, audit."""

from __future__ import annotations

import pytest

from tests.support.api import create_chain, create_tenant, get_json
from tests.support.entries import audits_of, events_of, put_permission


async def test_create_update_delete_with_events_and_audit(client, admin, db_conn) -> None:
    tid = (await create_tenant(client, admin))["id"]
    path = f"/api/v1/tenants/{tid}/permissions"
    resp = await client.put(f"{path}/users.invite", json={"value": True}, headers=admin)
    created = await resp.json()
    assert resp.status == 201, created
    assert resp.headers["Location"] == f"{path}/users.invite"
    assert {k: created[k] for k in ("key", "value", "mode")} == {
        "key": "users.invite", "value": True, "mode": "INHERIT",
    }  # fmt: skip
    assert set(created) == {"key", "value", "mode", "created_at", "updated_at"}
    # Mode kept when omitted; the same body again changes nothing and records nothing.
    _, updated = await put_permission(client, admin, tid, "users.invite", False, expect=200)
    assert (updated["value"], updated["mode"]) == (False, "INHERIT")
    await put_permission(client, admin, tid, "users.invite", False, "LOCAL", expect=200)
    await put_permission(client, admin, tid, "users.invite", False, expect=200)
    await put_permission(client, admin, tid, "billing", True, "LOCKED", expect=201)

    assert [(p["key"], p["value"], p["mode"]) for p in await get_json(client, path, admin)] == [
        ("billing", True, "LOCKED"),
        ("users.invite", False, "LOCAL"),
    ]
    one = await get_json(client, f"{path}/billing", admin)
    assert (one["value"], one["mode"]) == (True, "LOCKED")

    assert (await client.delete(f"{path}/users.invite", headers=admin)).status == 204
    for resp in (
        await client.get(f"{path}/users.invite", headers=admin),
        await client.delete(f"{path}/users.invite", headers=admin),
    ):
        assert (resp.status, (await resp.json())["error"]["code"]) == (404, "PERMISSION_NOT_FOUND")

    events = [e for e in await events_of(db_conn, tid) if e[0] != "tenant.created"]
    assert events == [
        ("permission.created", {"tenant_id": tid, "key": "users.invite", "value": True,
                                "mode": "INHERIT"}),
        ("permission.updated", {"tenant_id": tid, "key": "users.invite", "value": False,
                                "mode": "INHERIT"}),
        ("permission.updated", {"tenant_id": tid, "key": "users.invite", "value": False,
                                "mode": "LOCAL"}),
        ("permission.created", {"tenant_id": tid, "key": "billing", "value": True,
                                "mode": "LOCKED"}),
        ("permission.deleted", {"tenant_id": tid, "key": "users.invite"}),
    ]  # fmt: skip
    audits = [a for a in await audits_of(db_conn, tid) if a[0].startswith("permission.")]
    assert [(a[0], a[1]) for a in audits] == [
        ("permission.created", "users.invite"),
        ("permission.updated", "users.invite"),
        ("permission.updated", "users.invite"),
        ("permission.created", "billing"),
        ("permission.deleted", "users.invite"),
    ]
    assert audits[1][2] == {
        "before": {"value": True, "mode": "INHERIT"},
        "after": {"value": False, "mode": "INHERIT"},
    }
    assert audits[-1][2] == {"before": {"value": False, "mode": "LOCAL"}, "after": None}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"value": "yes"}, "value"),
        ({"value": 1}, "value"),
        ({"value": True, "mode": "SHARED"}, "mode"),
        ({"mode": "LOCAL"}, "value"),
        ({"value": True, "locked": True}, "locked"),
    ],
)
async def test_bad_bodies_are_400(client, admin, body, field) -> None:
    tid = (await create_tenant(client, admin))["id"]
    resp = await client.put(f"/api/v1/tenants/{tid}/permissions/p", json=body, headers=admin)
    data = await resp.json()
    assert (resp.status, data["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert data["error"]["details"][0]["field"] == field


async def test_locked_policies_refuse_writes_below(client, admin) -> None:
    root, mid, leaf = await create_chain(client, admin, 3)
    await put_permission(client, admin, leaf["id"], "export", True, expect=201)
    await put_permission(client, admin, mid["id"], "export", False, "LOCKED", expect=201)
    status, body = await put_permission(client, admin, leaf["id"], "export", True)
    assert (status, body["error"]["code"]) == (409, "PERMISSION_LOCKED")
    resp = await client.delete(f"/api/v1/tenants/{leaf['id']}/permissions/export", headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (409, "PERMISSION_LOCKED")
    # The owner may change it; above it nothing is refused.
    await put_permission(client, admin, mid["id"], "export", True, expect=200)
    await put_permission(client, admin, root["id"], "export", False, expect=201)
    # INHERIT and LOCAL policies above do not refuse anything below.
    await put_permission(client, admin, root["id"], "audit", True, "LOCAL", expect=201)
    await put_permission(client, admin, mid["id"], "audit", False, expect=201)
    await put_permission(client, admin, leaf["id"], "audit", True, expect=201)


async def test_archived_tenant_is_410(client, admin) -> None:
    tid = (await create_tenant(client, admin))["id"]
    await put_permission(client, admin, tid, "p", True, expect=201)
    assert (await client.delete(f"/api/v1/tenants/{tid}", headers=admin)).status == 204
    for method in ("GET", "PUT", "DELETE"):
        resp = await client.request(
            method, f"/api/v1/tenants/{tid}/permissions/p", json={"value": True}, headers=admin
        )
        assert (resp.status, (await resp.json())["error"]["code"]) == (410, "TENANT_ARCHIVED")
