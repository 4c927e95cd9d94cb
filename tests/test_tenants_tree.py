"""The hierarchy: ancestors root first, descendants in pre-order, children, moves, cycles."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from aiohttp.test_utils import TestClient

from tests.support.api import create_chain, create_tenant, get_json, move
from tests.support.invariants import tree_problems


async def build_tree(client: TestClient, headers: dict[str, str]) -> dict[str, dict[str, Any]]:
    """root ─ a ─ a1 ─ a1x
         └ a2
    └ b ─ b1"""
    t: dict[str, dict[str, Any]] = {}
    t["root"] = await create_tenant(client, headers, name="root")
    t["a"] = await create_tenant(client, headers, name="a", parent_id=t["root"]["id"])
    t["b"] = await create_tenant(client, headers, name="b", parent_id=t["root"]["id"])
    t["a1"] = await create_tenant(client, headers, name="a1", parent_id=t["a"]["id"])
    t["b1"] = await create_tenant(client, headers, name="b1", parent_id=t["b"]["id"])
    t["a2"] = await create_tenant(client, headers, name="a2", parent_id=t["a"]["id"])
    t["a1x"] = await create_tenant(client, headers, name="a1x", parent_id=t["a1"]["id"])
    return t


def names(items: list[dict[str, Any]]) -> list[str]:
    return [i["name"] for i in items]


async def test_ancestors_root_first_ending_at_the_parent(client, admin) -> None:
    t = await build_tree(client, admin)
    ancestors = await get_json(client, f"/api/v1/tenants/{t['a1x']['id']}/ancestors", admin)
    assert names(ancestors) == ["root", "a", "a1"]
    assert ancestors[0] == t["root"]
    assert await get_json(client, f"/api/v1/tenants/{t['root']['id']}/ancestors", admin) == []


async def test_descendants_in_depth_first_pre_order(client, admin) -> None:
    t = await build_tree(client, admin)
    desc = await get_json(client, f"/api/v1/tenants/{t['root']['id']}/descendants", admin)
    assert names(desc) == ["a", "a1", "a1x", "a2", "b", "b1"]
    shallow = await get_json(
        client, f"/api/v1/tenants/{t['root']['id']}/descendants?max_depth=1", admin
    )
    assert names(shallow) == ["a", "b"]
    await client.delete(f"/api/v1/tenants/{t['a2']['id']}", headers=admin)
    desc = await get_json(client, f"/api/v1/tenants/{t['root']['id']}/descendants", admin)
    assert names(desc) == ["a", "a1", "a1x", "b", "b1"]
    with_archived = await get_json(
        client, f"/api/v1/tenants/{t['root']['id']}/descendants?include_archived=true", admin
    )
    assert names(with_archived) == ["a", "a1", "a1x", "a2", "b", "b1"]
    for bad in ("max_depth=0", "max_depth=x", "include_archived=maybe"):
        resp = await client.get(
            f"/api/v1/tenants/{t['root']['id']}/descendants?{bad}", headers=admin
        )
        assert resp.status == 400, bad


async def test_children_in_id_order_with_optional_pages(client, admin) -> None:
    t = await build_tree(client, admin)
    kids = await get_json(client, f"/api/v1/tenants/{t['root']['id']}/children", admin)
    assert names(kids) == ["a", "b"]
    resp = await client.get(f"/api/v1/tenants/{t['root']['id']}/children?limit=1", headers=admin)
    first = await resp.json()
    assert names(first) == ["a"]
    cursor = resp.headers["X-Next-Cursor"]
    resp = await client.get(
        f"/api/v1/tenants/{t['root']['id']}/children?limit=1&cursor={cursor}", headers=admin
    )
    assert names(await resp.json()) == ["b"]
    assert "X-Next-Cursor" not in resp.headers
    await client.delete(f"/api/v1/tenants/{t['b1']['id']}", headers=admin)
    await client.delete(f"/api/v1/tenants/{t['b']['id']}", headers=admin)
    assert names(await get_json(client, f"/api/v1/tenants/{t['root']['id']}/children", admin)) == [
        "a"
    ]
    everything = await get_json(
        client, f"/api/v1/tenants/{t['root']['id']}/children?include_archived=true", admin
    )
    assert names(everything) == ["a", "b"]


async def test_move_rewrites_the_subtree(client, admin, db_conn) -> None:
    t = await build_tree(client, admin)
    status, moved = await move(client, admin, t["a"]["id"], t["b1"]["id"])
    assert status == 200, moved
    assert moved["parent_id"] == t["b1"]["id"]
    assert moved["ancestry_path"] == f"{t['b1']['ancestry_path']}/{t['a']['id']}"
    assert moved["depth"] == 3
    a1x = await get_json(client, f"/api/v1/tenants/{t['a1x']['id']}", admin)
    assert a1x["depth"] == 5
    assert names(await get_json(client, f"/api/v1/tenants/{t['a1x']['id']}/ancestors", admin)) == [
        "root", "b", "b1", "a", "a1",
    ]  # fmt: skip
    desc = await get_json(client, f"/api/v1/tenants/{t['root']['id']}/descendants", admin)
    assert names(desc) == ["b", "b1", "a", "a1", "a1x", "a2"]
    event = await db_conn.fetchrow(
        "SELECT payload FROM events WHERE type = 'tenant.moved' AND tenant_id = $1",
        UUID(t["a"]["id"]),
    )
    assert event["payload"] == {
        "id": t["a"]["id"],
        "slug": t["a"]["slug"],
        "old_parent_id": t["root"]["id"],
        "new_parent_id": t["b1"]["id"],
        "old_ancestry_path": t["a"]["ancestry_path"],
        "new_ancestry_path": moved["ancestry_path"],
        "descendants_moved": 3,
    }
    assert await tree_problems(db_conn) == []


async def test_move_to_root_and_between_trees(client, admin, db_conn) -> None:
    t = await build_tree(client, admin)
    other = await create_tenant(client, admin, name="other")
    status, moved = await move(client, admin, t["b"]["id"], None)
    assert status == 200
    assert (moved["parent_id"], moved["depth"], moved["ancestry_path"]) == (
        None, 0, f"/{t['b']['id']}",
    )  # fmt: skip
    status, moved = await move(client, admin, t["b"]["id"], other["id"])
    assert status == 200
    assert moved["depth"] == 1
    b1 = await get_json(client, f"/api/v1/tenants/{t['b1']['id']}", admin)
    assert b1["ancestry_path"] == f"/{other['id']}/{t['b']['id']}/{t['b1']['id']}"
    status, moved = await move(client, admin, other["id"], t["a2"]["id"])
    assert status == 200
    assert moved["depth"] == 3
    assert await tree_problems(db_conn) == []


async def test_cycles_are_refused(client, admin) -> None:
    t = await build_tree(client, admin)
    for target in ("a", "a1", "a1x"):
        status, body = await move(client, admin, t["a"]["id"], t[target]["id"])
        assert status == 409, target
        assert body["error"]["code"] == "CYCLE_DETECTED"


async def test_move_to_current_parent_is_a_quiet_no_op(client, admin, db_conn) -> None:
    t = await build_tree(client, admin)
    before = await db_conn.fetchval("SELECT count(*) FROM events")
    status, body = await move(client, admin, t["a1"]["id"], t["a"]["id"])
    assert status == 200
    assert body == await get_json(client, f"/api/v1/tenants/{t['a1']['id']}", admin)
    assert await db_conn.fetchval("SELECT count(*) FROM events") == before


async def test_move_validation_and_depth_limit(client, admin) -> None:
    t = await build_tree(client, admin)
    resp = await client.post(f"/api/v1/tenants/{t['a']['id']}/move", json={}, headers=admin)
    assert resp.status == 400
    resp = await client.post(
        f"/api/v1/tenants/{t['a']['id']}/move", json={"new_parent_id": "x"}, headers=admin
    )
    assert resp.status == 400
    status, body = await move(client, admin, t["a"]["id"], "01a20214-0000-7000-8000-000000000000")
    assert status == 404
    assert body["error"]["code"] == "TENANT_NOT_FOUND"
    chain = await create_chain(client, admin, 31)  # depths 0..30
    status, body = await move(client, admin, t["a"]["id"], chain[-1]["id"])
    assert status == 409
    assert body["error"]["code"] == "DEPTH_LIMIT_EXCEEDED"
    status, body = await move(client, admin, t["a1x"]["id"], chain[-1]["id"])
    assert status == 200
    assert body["depth"] == 31
