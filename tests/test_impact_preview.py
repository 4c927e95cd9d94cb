"""Impact preview of config entry changes: the tenants whose resolved value would change
(paged, old and new value and source), the descendants' entries a lock would shadow,
the refusal the write would get; and nothing written, emitted or invalidated."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp.test_utils import TestClient

from service.http.appkeys import READ_CACHE
from tests.support.api import create_tenant, get_json
from tests.support.gdpr import error_of
from tests.support.keys import key_headers


async def put(client: TestClient, admin: dict[str, str], tenant: dict, key: str, **body: Any):
    resp = await client.put(f"/api/v1/tenants/{tenant['id']}/config/{key}", json=body,
                            headers=admin)  # fmt: skip
    assert resp.status in (200, 201), await resp.text()


async def preview(
    client: TestClient, admin: dict[str, str], tenant: dict, key: str, query: str = "", **body: Any
) -> tuple[dict[str, Any], str | None]:
    resp = await client.post(f"/api/v1/tenants/{tenant['id']}/config/{key}/preview{query}",
                             json=body, headers=admin)  # fmt: skip
    data = await resp.json()
    assert resp.status == 200, data
    return data, resp.headers.get("X-Next-Cursor")


async def tree(client: TestClient, admin: dict[str, str]) -> dict[str, dict[str, Any]]:
    """root (theme light) > a > b (own dark) > d (own blue); a > c."""
    root = await create_tenant(client, admin, name="root")
    a = await create_tenant(client, admin, parent_id=root["id"], name="a")
    b = await create_tenant(client, admin, parent_id=a["id"], name="b")
    c = await create_tenant(client, admin, parent_id=a["id"], name="c")
    d = await create_tenant(client, admin, parent_id=b["id"], name="d")
    await put(client, admin, root, "theme", value="light")
    await put(client, admin, b, "theme", value="dark")
    await put(client, admin, d, "theme", value="blue")
    return {"root": root, "a": a, "b": b, "c": c, "d": d}


def resolved(value: Any, source: dict, locked: bool = False) -> dict[str, Any]:
    return {"value": value, "source_tenant_id": source["id"], "locked": locked, "sensitive": False}


async def counts(conn: asyncpg.Connection) -> tuple[int, ...]:
    return tuple(
        [
            await conn.fetchval(f"SELECT count(*) FROM {table}")
            for table in ("events", "audit_logs", "config_entries", "webhook_deliveries")
        ]
    )


async def test_a_new_lock_lists_every_change_and_what_it_shadows(client, admin, db_conn):
    t = await tree(client, admin)
    # a cached read that a real write would invalidate
    await get_json(client, f"/api/v1/tenants/{t['d']['id']}/context", admin)
    cache = client.app[READ_CACHE]
    cached, generation = len(cache), cache.generation
    before = await counts(db_conn)

    data, cursor = await preview(client, admin, t["a"], "theme", change="set", value="neon",
                                 locked=True)  # fmt: skip
    neon = resolved("neon", t["a"], locked=True)
    expected = {
        t["a"]["id"]: (resolved("light", t["root"]), neon),
        t["b"]["id"]: (resolved("dark", t["b"]), neon),
        t["c"]["id"]: (resolved("light", t["root"]), neon),
        t["d"]["id"]: (resolved("blue", t["d"]), neon),
    }
    assert cursor is None
    assert data == {
        "dry_run": True, "tenant_id": t["a"]["id"], "key": "theme", "change": "set",
        "refused": None, "changed_tenants": 4,
        "changes": [{"tenant_id": k, "old": o, "new": n} for k, (o, n) in sorted(expected.items())],
        "shadowed_entries": sorted(
            [{"tenant_id": t[n]["id"], "value": v, "locked": False, "sensitive": False}
             for n, v in (("b", "dark"), ("d", "blue"))], key=lambda e: e["tenant_id"],
        ),
        "shadowed_total": 2,
    }  # fmt: skip
    # nothing written, emitted or invalidated
    assert await counts(db_conn) == before
    assert (len(cache), cache.generation) == (cached, generation)
    resp = await client.get(f"/api/v1/tenants/{t['a']['id']}/config/theme", headers=admin)
    assert resp.status == 404

    # paged: two at a time, the total on every page
    first, cursor = await preview(client, admin, t["a"], "theme", "?limit=3", change="set",
                                  value="neon", locked=True)  # fmt: skip
    assert cursor == first["changes"][-1]["tenant_id"]
    rest, last = await preview(client, admin, t["a"], "theme", f"?limit=3&cursor={cursor}",
                               change="set", value="neon", locked=True)  # fmt: skip
    assert last is None
    assert first["changes"] + rest["changes"] == data["changes"]
    assert first["changed_tenants"] == rest["changed_tenants"] == 4


async def test_deletes_and_refusals(client, admin, db_conn):
    t = await tree(client, admin)
    # deleting b's own value: b falls back to root's; d keeps its own
    data, _ = await preview(client, admin, t["b"], "theme", change="delete")
    assert (data["refused"], data["changed_tenants"], data["shadowed_total"]) == (None, 1, 0)
    assert data["changes"] == [
        {"tenant_id": t["b"]["id"], "old": resolved("dark", t["b"]),
         "new": resolved("light", t["root"])},
    ]  # fmt: skip
    # an unlocked value at a changes only a and c (b and d have their own)
    data, _ = await preview(client, admin, t["a"], "theme", change="set", value="x")
    assert sorted(c["tenant_id"] for c in data["changes"]) == sorted([t["a"]["id"], t["c"]["id"]])
    assert data["shadowed_entries"] == []
    # once root locks the key, writes below are refused, and the preview says so
    await put(client, admin, t["root"], "theme", value="light", locked=True)
    data, _ = await preview(client, admin, t["b"], "theme", change="set", value="y")
    assert data["refused"] == {
        "code": "CONFIG_LOCKED",
        "message": f"config key 'theme' is locked by ancestor {t['root']['id']}",
    }
    assert data["changed_tenants"] == 0  # root's lock wins whatever b holds
    data, _ = await preview(client, admin, t["c"], "missing", change="delete")
    assert data["refused"] == {
        "code": "CONFIG_NOT_FOUND", "message": "the tenant has no config entry 'missing'",
    }  # fmt: skip
    # the real write agrees
    resp = await client.put(f"/api/v1/tenants/{t['b']['id']}/config/theme", json={"value": "y"},
                            headers=admin)  # fmt: skip
    assert await error_of(resp) == (409, "CONFIG_LOCKED")


async def test_bad_previews_are_400_and_scoped_callers_stay_inside(client, admin):
    t = await tree(client, admin)
    path = f"/api/v1/tenants/{t['a']['id']}/config/theme/preview"
    for body in ({"change": "delete", "value": 1}, {"change": "set"}, {"change": "move"}):
        resp = await client.post(path, json=body, headers=admin)
        assert await error_of(resp) == (400, "VALIDATION_ERROR"), body
    other = await create_tenant(client, admin)
    scoped = await key_headers(client.app, tenant_id=other["id"])
    resp = await client.post(path, json={"change": "delete"}, headers=scoped)
    assert await error_of(resp) == (404, "TENANT_NOT_FOUND")


async def test_permission_previews(client, admin, db_conn):
    t = await tree(client, admin)

    async def policy(tenant: dict, key: str, **body: Any) -> None:
        resp = await client.put(f"/api/v1/tenants/{tenant['id']}/permissions/{key}", json=body,
                                headers=admin)  # fmt: skip
        assert resp.status in (200, 201), await resp.text()

    await policy(t["root"], "billing.view", value=True)
    await policy(t["b"], "billing.view", value=False)
    await policy(t["c"], "billing.view", value=False, mode="LOCAL")
    before = await counts(db_conn)
    resp = await client.post(f"/api/v1/tenants/{t['a']['id']}/permissions/billing.view/preview",
                             json={"change": "set", "value": False, "mode": "LOCKED"},
                             headers=admin)  # fmt: skip
    data = await resp.json()
    assert resp.status == 200, data
    locked = {"value": False, "mode": "LOCKED", "source_tenant_id": t["a"]["id"]}
    root = {"value": True, "mode": "INHERIT", "source_tenant_id": t["root"]["id"]}
    own_b = {"value": False, "mode": "INHERIT", "source_tenant_id": t["b"]["id"]}
    own_c = {"value": False, "mode": "LOCAL", "source_tenant_id": t["c"]["id"]}
    expected = {t["a"]["id"]: root, t["b"]["id"]: own_b, t["c"]["id"]: own_c,
                t["d"]["id"]: own_b}  # fmt: skip
    assert data == {
        "dry_run": True, "tenant_id": t["a"]["id"], "key": "billing.view", "change": "set",
        "refused": None, "changed_tenants": 4,
        "changes": [{"tenant_id": k, "old": o, "new": locked} for k, o in sorted(expected.items())],
        "shadowed_policies": sorted(
            [{"tenant_id": t["b"]["id"], "value": False, "mode": "INHERIT"},
             {"tenant_id": t["c"]["id"], "value": False, "mode": "LOCAL"}],
            key=lambda p: p["tenant_id"],
        ),
        "shadowed_total": 2,
    }  # fmt: skip
    assert await counts(db_conn) == before
    await policy(t["root"], "billing.view", value=True, mode="LOCKED")
    resp = await client.post(f"/api/v1/tenants/{t['b']['id']}/permissions/billing.view/preview",
                             json={"change": "delete"}, headers=admin)  # fmt: skip
    data = await resp.json()
    assert data["refused"] == {
        "code": "PERMISSION_LOCKED",
        "message": f"permission key 'billing.view' is locked by ancestor {t['root']['id']}",
    }
    assert data["changed_tenants"] == 0
