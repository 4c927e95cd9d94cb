"""Budgets of config keys: the children's own values sum to at most the parent's
resolved value, at three levels, under 50 concurrent writers (real connections), when a
parent is lowered, and without making writes under different parents wait."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json, move

H = dict[str, str]


async def put_value(client: TestClient, h: H, tenant: str, value: Any, key: str = "seats"):
    resp = await client.put(f"/api/v1/tenants/{tenant}/config/{key}", json={"value": value},
                            headers=h)  # fmt: skip
    return resp.status, await resp.json()


async def budget(client: TestClient, h: H, tenant: str, key: str = "seats") -> tuple[int, Any]:
    resp = await client.put(f"/api/v1/tenants/{tenant}/config-budgets/{key}", json={}, headers=h)
    return resp.status, await resp.json()


async def test_three_levels(client: TestClient, admin: H) -> None:
    reseller = await create_tenant(client, admin, config={"seats": 100})
    a = await create_tenant(client, admin, parent_id=reseller["id"])
    b = await create_tenant(client, admin, parent_id=reseller["id"])
    status, declared = await budget(client, admin, reseller["id"])
    assert status == 201
    assert declared == {
        "tenant_id": reseller["id"],
        "key": "seats",
        "capacity": 100,
        "allocated": 0,
        "remaining": 100,
        "created_at": declared["created_at"],
    }
    assert (await budget(client, admin, reseller["id"]))[0] == 200
    assert (await put_value(client, admin, a["id"], 60))[0] == 201
    status, body = await put_value(client, admin, b["id"], 41)
    assert status == 409
    assert body["error"]["code"] == "BUDGET_EXCEEDED"
    assert body["error"]["details"] == [
        {
            "field": "value",
            "message": "40 left",
            "tenant_id": reseller["id"],
            "key": "seats",
            "capacity": 100,
            "allocated": 60,
            "remaining": 40,
        }
    ]
    assert (await put_value(client, admin, b["id"], 40))[0] == 201
    # Level two: a splits its 60 further; its own budget.
    a1 = await create_tenant(client, admin, parent_id=a["id"])
    a2 = await create_tenant(client, admin, parent_id=a["id"])
    assert (await budget(client, admin, a["id"]))[0] == 201
    assert (await put_value(client, admin, a1["id"], 30))[0] == 201
    assert (await put_value(client, admin, a2["id"], 31))[0] == 409
    assert (await put_value(client, admin, a2["id"], 30))[0] == 201
    # Level three: a1 hands its 30 to two leaves; a leaf created with a value counts too.
    assert (await budget(client, admin, a1["id"]))[0] == 201
    await create_tenant(client, admin, parent_id=a1["id"], config={"seats": 20})
    refused = await create_tenant(client, admin, parent_id=a1["id"], config={"seats": 11},
                                  expect=409)  # fmt: skip
    assert refused["error"]["details"][0]["tenant_id"] == a1["id"]
    assert refused["error"]["details"][0]["remaining"] == 10
    await create_tenant(client, admin, parent_id=a1["id"], config={"seats": 10})
    # Raising a1 past what a can give is refused at a's level; PATCH is judged too.
    status, body = await put_value(client, admin, a1["id"], 31)
    assert status == 409
    assert body["error"]["details"][0]["tenant_id"] == a["id"]
    resp = await client.patch(f"/api/v1/tenants/{a1['id']}", json={"config": {"seats": 31}},
                              headers=admin)  # fmt: skip
    assert resp.status == 409
    # What each budget shows.
    listed = await get_json(client, f"/api/v1/tenants/{a['id']}/config-budgets", admin)
    assert [(x["capacity"], x["allocated"], x["remaining"]) for x in listed] == [(60, 60, 0)]
    one = await get_json(client, f"/api/v1/tenants/{a1['id']}/config-budgets/seats", admin)
    assert (one["capacity"], one["allocated"], one["remaining"]) == (30, 30, 0)


async def test_lowering_a_parent_and_removing_values(client: TestClient, admin: H) -> None:
    top = await create_tenant(client, admin, config={"seats": 10})
    mid = await create_tenant(client, admin, parent_id=top["id"], config={"seats": 10})
    leaf = await create_tenant(client, admin, parent_id=mid["id"], config={"seats": 6})
    assert (await budget(client, admin, top["id"]))[0] == 201
    assert (await budget(client, admin, mid["id"]))[0] == 201
    status, body = await put_value(client, admin, mid["id"], 5)
    assert status == 409
    assert body["error"]["code"] == "BUDGET_EXCEEDED"
    assert body["error"]["details"][0]["tenant_id"] == mid["id"]
    assert body["error"]["details"][0]["allocated"] == 6
    status, body = await put_value(client, admin, top["id"], 9)
    assert status == 409
    assert body["error"]["details"][0]["tenant_id"] == top["id"]
    # Removing mid's own value leaves it with what it inherits (top's 10): fine.
    assert (
        await client.delete(f"/api/v1/tenants/{mid['id']}/config/seats", headers=admin)
    ).status == 204
    # Now top's value is mid's capacity too: lowering it below leaf's 6 is refused.
    status, body = await put_value(client, admin, top["id"], 5)
    assert status == 409
    assert body["error"]["details"][0]["tenant_id"] == mid["id"]
    # Removing top's value leaves mid with nothing to give.
    resp = await client.delete(f"/api/v1/tenants/{top['id']}/config/seats", headers=admin)
    assert resp.status == 409
    assert (
        await client.delete(f"/api/v1/tenants/{leaf['id']}/config/seats", headers=admin)
    ).status == 204
    assert (await put_value(client, admin, top["id"], 1))[0] == 200


async def test_non_numeric_values_and_declaring_over_budget(client: TestClient, admin: H) -> None:
    parent = await create_tenant(client, admin, config={"seats": 5})
    kid = await create_tenant(client, admin, parent_id=parent["id"], config={"seats": 6})
    status, body = await budget(client, admin, parent["id"])
    assert status == 409
    assert body["error"]["code"] == "BUDGET_EXCEEDED"
    await get_json(client, f"/api/v1/tenants/{parent['id']}/config-budgets/seats", admin,
                   expect=404)  # fmt: skip
    assert (await put_value(client, admin, kid["id"], "many"))[0] == 200
    status, body = await budget(client, admin, parent["id"])
    assert status == 422
    assert body["error"]["code"] == "BUDGET_NOT_NUMERIC"
    assert (await put_value(client, admin, kid["id"], 2))[0] == 200
    assert (await budget(client, admin, parent["id"]))[0] == 201
    for bad in ("3", True, [1], {"n": 1}):
        status, body = await put_value(client, admin, kid["id"], bad)
        assert status == 422, bad
        assert body["error"]["code"] == "BUDGET_NOT_NUMERIC"
    status, body = await put_value(client, admin, parent["id"], "lots")
    assert status == 422
    resp = await client.put(f"/api/v1/tenants/{kid['id']}/config/seats",
                            json={"value": 1, "sensitive": True}, headers=admin)  # fmt: skip
    assert resp.status == 422
    # Deleting the budget frees the key.
    assert (await client.delete(f"/api/v1/tenants/{parent['id']}/config-budgets/seats",
                                headers=admin)).status == 204  # fmt: skip
    assert (await put_value(client, admin, kid["id"], "many"))[0] == 200


async def test_moves_count_against_the_new_parent(client: TestClient, admin: H) -> None:
    full = await create_tenant(client, admin, config={"seats": 10})
    await create_tenant(client, admin, parent_id=full["id"], config={"seats": 8})
    await budget(client, admin, full["id"])
    other = await create_tenant(client, admin)
    mover = await create_tenant(client, admin, parent_id=other["id"], config={"seats": 3})
    status, body = await move(client, admin, mover["id"], full["id"])
    assert status == 409
    assert body["error"]["code"] == "BUDGET_EXCEEDED"
    assert body["error"]["details"][0]["tenant_id"] == full["id"]
    await put_value(client, admin, mover["id"], 2)
    assert (await move(client, admin, mover["id"], full["id"]))[0] == 200


async def test_fifty_concurrent_allocations_never_exceed(client: TestClient, admin: H) -> None:
    parent = await create_tenant(client, admin, config={"seats": 100})
    kids = await asyncio.gather(
        *(create_tenant(client, admin, parent_id=parent["id"]) for _ in range(50))
    )
    await budget(client, admin, parent["id"])
    # 50 writers at once, 7 each: at most 14 fit (98); every answer is 201 or 409.
    results = await asyncio.gather(*(put_value(client, admin, k["id"], 7) for k in kids))
    statuses = sorted(s for s, _ in results)
    assert statuses.count(201) == 14, statuses
    assert statuses.count(409) == 36, statuses
    held = await get_json(client, f"/api/v1/tenants/{parent['id']}/config-budgets/seats", admin)
    assert (held["allocated"], held["remaining"]) == (98, 2)
    # A second round of 50 raising and lowering at once stays within the budget too.
    results = await asyncio.gather(
        *(put_value(client, admin, k["id"], 1 if i % 2 else 9) for i, k in enumerate(kids))
    )
    held = await get_json(client, f"/api/v1/tenants/{parent['id']}/config-budgets/seats", admin)
    assert held["allocated"] <= 100, held
    total = 0
    for k in kids:
        resp = await client.get(f"/api/v1/tenants/{k['id']}/config/seats", headers=admin)
        if resp.status == 200:
            total += (await resp.json())["value"]
    assert total == held["allocated"]


async def test_writes_under_different_parents_do_not_wait(client: TestClient, admin: H,
                                                          db_conn: Any) -> None:  # fmt: skip
    first = await create_tenant(client, admin, config={"seats": 10})
    second = await create_tenant(client, admin, config={"seats": 10})
    kid1 = await create_tenant(client, admin, parent_id=first["id"])
    kid2 = await create_tenant(client, admin, parent_id=second["id"])
    sibling = await create_tenant(client, admin, parent_id=first["id"])
    await budget(client, admin, first["id"])
    await budget(client, admin, second["id"])
    # Hold first's budget row as an allocation under first would.
    async with db_conn.transaction():
        await db_conn.execute(
            "SELECT 1 FROM config_budgets WHERE tenant_id = $1 AND key = 'seats' FOR UPDATE",
            first["id"],
        )
        # Under another parent: answers at once.
        status, _ = await asyncio.wait_for(put_value(client, admin, kid2["id"], 4), timeout=10)
        assert status == 201
        # Under the same parent: waits for the row.
        waiting = asyncio.ensure_future(put_value(client, admin, kid1["id"], 4))
        done, _ = await asyncio.wait({waiting}, timeout=0.5)
        assert not done
    status, _ = await asyncio.wait_for(waiting, timeout=10)
    assert status == 201
    assert (await put_value(client, admin, sibling["id"], 6))[0] == 201
