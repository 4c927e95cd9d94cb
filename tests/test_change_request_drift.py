"""IMPACT_DRIFT: the affected set is recomputed in the apply's own transaction; a move
or a new lock between approval and apply that changes it refuses the apply (nothing
applied, the request back in pending_approval with the new impact, what changed
shown); a change to unrelated tenants does not."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant
from tests.support.change_requests import BASE, approve, call, config_set, propose
from tests.support.keys import key_headers


async def _setup(client: TestClient, admin: dict[str, str]) -> dict[str, Any]:
    author = await key_headers(client.app, ("read", "write"), name="author")
    reviewer = await key_headers(client.app, ("read", "write"), name="reviewer")
    root = await create_tenant(client, admin)
    a = await create_tenant(client, admin, parent_id=root["id"])
    b = await create_tenant(client, admin, parent_id=a["id"])
    cr = await propose(client, author, [config_set(a["id"], "limit", 7)])
    assert {e["tenant_id"] for e in cr["impact"]} == {a["id"], b["id"]}
    await approve(client, cr["id"], reviewer)
    return {"author": author, "reviewer": reviewer, "root": root, "a": a, "b": b, "cr": cr}


async def test_a_move_into_the_subtree_is_drift(client: TestClient, admin: dict[str, str]) -> None:
    world = await _setup(client, admin)
    newcomer = await create_tenant(client, admin, parent_id=world["root"]["id"])
    resp = await client.post(
        f"/api/v1/tenants/{newcomer['id']}/move",
        json={"new_parent_id": world["b"]["id"]},
        headers=admin,
    )
    assert resp.status == 200
    cr = world["cr"]["id"]
    status, body = await call(client, "POST", f"{BASE}/{cr}/apply", world["author"])
    assert status == 409, body
    assert body["error"]["code"] == "IMPACT_DRIFT"
    assert body["drift"] == {
        "added": [{"tenant_id": newcomer["id"], "what": "config", "key": "limit"}],
        "removed": [],
    }
    assert body["change_request_id"] == cr
    status, after = await call(client, "GET", f"{BASE}/{cr}", world["author"])
    assert after["state"] == "pending_approval"
    assert after["approvals"] == 0
    assert {e["tenant_id"] for e in after["impact"]} == {
        world["a"]["id"], world["b"]["id"], newcomer["id"],
    }  # fmt: skip
    assert after["impact_digest"] != world["cr"]["impact_digest"]
    # Nothing applied; a new approval (a new round) applies the new impact.
    entry = await client.get(f"/api/v1/tenants/{world['a']['id']}/config/limit", headers=admin)
    assert entry.status == 404
    again = await approve(client, cr, world["reviewer"])
    assert [r["round"] for r in again["reviews"]] == [1, 2]
    status, applied = await call(client, "POST", f"{BASE}/{cr}/apply", world["author"])
    assert (status, applied["state"]) == (200, "applied")


async def test_a_new_lock_below_is_drift(client: TestClient, admin: dict[str, str]) -> None:
    world = await _setup(client, admin)
    # b locks its own value: a's change no longer reaches b.
    resp = await client.put(
        f"/api/v1/tenants/{world['b']['id']}/config/limit",
        json={"value": 1, "locked": True},
        headers=admin,
    )
    assert resp.status == 201
    cr = world["cr"]["id"]
    status, body = await call(client, "POST", f"{BASE}/{cr}/apply", world["author"])
    assert (status, body["error"]["code"]) == (409, "IMPACT_DRIFT")
    assert body["drift"] == {
        "added": [],
        "removed": [{"tenant_id": world["b"]["id"], "what": "config", "key": "limit"}],
    }


async def test_unrelated_changes_are_no_drift(client: TestClient, admin: dict[str, str]) -> None:
    world = await _setup(client, admin)
    elsewhere = await create_tenant(client, admin)
    sibling = await create_tenant(client, admin, parent_id=world["root"]["id"])
    for tenant in (elsewhere, sibling):
        resp = await client.put(
            f"/api/v1/tenants/{tenant['id']}/config/limit",
            json={"value": 3, "locked": True},
            headers=admin,
        )
        assert resp.status == 201
    # A value changing inside the subtree, for another key, is no drift either.
    resp = await client.put(
        f"/api/v1/tenants/{world['b']['id']}/config/other", json={"value": 1}, headers=admin
    )
    assert resp.status == 201
    cr = world["cr"]["id"]
    status, body = await call(client, "POST", f"{BASE}/{cr}/apply", world["author"])
    assert (status, body["state"]) == (200, "applied")
