"""Impact preview of a move: the subtree's changed config and permissions under the new
parent, a lock that would override a tenant's own entry, the refusals the move would
get (CYCLE_DETECTED, DEPTH_LIMIT_EXCEEDED), and nothing written or emitted."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json
from tests.support.gdpr import error_of


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"MAX_TENANT_DEPTH": "3"}


async def put(client: TestClient, admin: dict[str, str], path: str, **body: Any) -> None:
    resp = await client.put(f"/api/v1/tenants/{path}", json=body, headers=admin)
    assert resp.status in (200, 201), await resp.text()


async def preview(client: TestClient, admin: dict[str, str], tenant: dict, parent: Any,
                  query: str = "") -> tuple[dict[str, Any], str | None]:  # fmt: skip
    resp = await client.post(f"/api/v1/tenants/{tenant['id']}/move/preview{query}",
                             json={"new_parent_id": parent}, headers=admin)  # fmt: skip
    data = await resp.json()
    assert resp.status == 200, data
    return data, resp.headers.get("X-Next-Cursor")


async def counts(conn: asyncpg.Connection) -> list[int]:
    return [
        await conn.fetchval(f"SELECT count(*) FROM {table}")
        for table in ("events", "audit_logs", "tenant_closure")
    ]


async def test_a_move_lists_what_the_new_ancestors_change(client, admin, db_conn) -> None:
    r1 = await create_tenant(client, admin, name="r1")
    r2 = await create_tenant(client, admin, name="r2")
    s = await create_tenant(client, admin, parent_id=r1["id"], name="s")
    s1 = await create_tenant(client, admin, parent_id=s["id"], name="s1")
    await put(client, admin, f"{r1['id']}/config/theme", value="light")
    await put(client, admin, f"{r2['id']}/config/theme", value="dark", locked=True)
    await put(client, admin, f"{s1['id']}/config/theme", value="own")
    await put(client, admin, f"{r2['id']}/permissions/billing.view", value=True)
    before = await counts(db_conn)

    data, cursor = await preview(client, admin, s, r2["id"])
    dark = {"value": "dark", "source_tenant_id": r2["id"], "locked": True, "sensitive": False}
    billing = {"value": True, "source_tenant_id": r2["id"], "mode": "INHERIT"}

    def entries(old_theme: dict[str, Any], shadows: bool) -> list[dict[str, Any]]:
        return [
            {"kind": "config", "key": "theme", "old": old_theme, "new": dark,
             "shadows_own": shadows},
            {"kind": "permission", "key": "billing.view", "old": None, "new": billing,
             "shadows_own": False},
        ]  # fmt: skip

    light = {"value": "light", "source_tenant_id": r1["id"], "locked": False, "sensitive": False}
    own = {"value": "own", "source_tenant_id": s1["id"], "locked": False, "sensitive": False}
    expected = {s["id"]: entries(light, False), s1["id"]: entries(own, True)}
    assert cursor is None
    assert data == {
        "dry_run": True, "tenant_id": s["id"], "new_parent_id": r2["id"], "refused": None,
        "changed_tenants": 2,
        "changes": [{"tenant_id": k, "entries": v} for k, v in sorted(expected.items())],
    }  # fmt: skip
    first, cursor = await preview(client, admin, s, r2["id"], "?limit=1")
    assert (first["changes"], cursor) == (data["changes"][:1], data["changes"][0]["tenant_id"])
    # nothing moved, written or emitted
    assert await counts(db_conn) == before
    assert (await get_json(client, f"/api/v1/tenants/{s['id']}", admin))["parent_id"] == r1["id"]
    # moving to the top: only r1's value goes
    top, _ = await preview(client, admin, s, None)
    assert [c["tenant_id"] for c in top["changes"]] == [s["id"]]


async def test_refused_moves_say_why(client, admin) -> None:
    a = await create_tenant(client, admin)
    b = await create_tenant(client, admin, parent_id=a["id"])
    c = await create_tenant(client, admin, parent_id=b["id"])
    d = await create_tenant(client, admin, parent_id=c["id"])  # depth 3, the limit
    x = await create_tenant(client, admin)
    await create_tenant(client, admin, parent_id=x["id"])
    data, _ = await preview(client, admin, a, d["id"])
    assert data["refused"] == {
        "code": "CYCLE_DETECTED",
        "message": "a tenant cannot be moved under itself or one of its descendants",
    }
    assert (data["changed_tenants"], data["changes"]) == (0, [])
    data, _ = await preview(client, admin, x, c["id"])
    assert data["refused"] == {
        "code": "DEPTH_LIMIT_EXCEEDED",
        "message": "the move would put tenants at depth 4, past MAX_TENANT_DEPTH (3)",
    }
    resp = await client.post(f"/api/v1/tenants/{x['id']}/move", json={"new_parent_id": c["id"]},
                             headers=admin)  # fmt: skip
    assert await error_of(resp) == (409, "DEPTH_LIMIT_EXCEEDED")
