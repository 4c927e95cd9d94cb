"""Impact previews report the schema and budget refusals a change would meet, exactly as
the change itself would answer them, and write nothing."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant

H = dict[str, str]


async def counts(conn: asyncpg.Connection) -> tuple[int, ...]:
    return tuple(
        [
            await conn.fetchval(f"SELECT count(*) FROM {table}")
            for table in ("events", "audit_logs", "config_entries", "tenant_closure")
        ]
    )


async def preview(client: TestClient, h: H, tenant: str, key: str, **body: Any) -> Any:
    resp = await client.post(f"/api/v1/tenants/{tenant}/config/{key}/preview", json=body,
                             headers=h)  # fmt: skip
    data = await resp.json()
    assert resp.status == 200, data
    return data


async def real_error(client: TestClient, h: H, method: str, path: str, body: Any) -> Any:
    resp = await client.request(method, path, json=body, headers=h)
    data = await resp.json()
    assert resp.status >= 400, data
    return {k: v for k, v in data["error"].items() if k != "request_id"}


async def test_config_previews_report_schema_and_budget_refusals(
    client: TestClient, admin: H, db_conn: asyncpg.Connection
) -> None:
    top = await create_tenant(client, admin, config={"seats": 10})
    await create_tenant(client, admin, parent_id=top["id"], config={"seats": 6})
    other = await create_tenant(client, admin, parent_id=top["id"])
    for path, body in (
        (f"{top['id']}/config-schemas/seats", {"schema": {"type": "integer", "maximum": 50}}),
        (f"{top['id']}/config-budgets/seats", {}),
    ):
        resp = await client.put(f"/api/v1/tenants/{path}", json=body, headers=admin)
        assert resp.status == 201, await resp.json()
    before = await counts(db_conn)
    cases = [
        (other, {"change": "set", "value": 51}),  # the schema refuses
        (other, {"change": "set", "value": 5}),  # the budget refuses: 4 left
        (other, {"change": "set", "value": "many"}),  # the schema refuses first
        (top, {"change": "set", "value": 5}),  # lowering below the 6 held
        (top, {"change": "delete"}),  # nothing left to give
    ]
    for tenant, body in cases:
        found = await preview(client, admin, tenant["id"], "seats", **body)
        path = f"/api/v1/tenants/{tenant['id']}/config/seats"
        if body["change"] == "set":
            error = await real_error(client, admin, "PUT", path, {"value": body["value"]})
        else:
            error = await real_error(client, admin, "DELETE", path, None)
        assert found["refused"] == error, body
    fits = await preview(client, admin, other["id"], "seats", change="set", value=4)
    assert fits["refused"] is None
    refused = (await preview(client, admin, other["id"], "seats", change="set", value=51))[
        "refused"
    ]
    assert refused["code"] == "CONFIG_SCHEMA_VIOLATION"
    assert refused["details"][0]["tenant_id"] == top["id"]
    refused = (await preview(client, admin, other["id"], "seats", change="set", value=5))["refused"]
    assert refused["code"] == "BUDGET_EXCEEDED"
    assert refused["details"][0]["remaining"] == 4
    assert await counts(db_conn) == before
    assert (await client.get(f"/api/v1/tenants/{other['id']}/config/seats",
                             headers=admin)).status == 404  # fmt: skip


async def test_move_previews_report_schema_and_budget_refusals(
    client: TestClient, admin: H, db_conn: asyncpg.Connection
) -> None:
    strict = await create_tenant(client, admin, config={"seats": 10})
    await create_tenant(client, admin, parent_id=strict["id"], config={"seats": 8})
    for path, body in (
        (f"{strict['id']}/config-schemas/plan", {"schema": {"enum": ["free", "pro"]}}),
        (f"{strict['id']}/config-budgets/seats", {}),
    ):
        resp = await client.put(f"/api/v1/tenants/{path}", json=body, headers=admin)
        assert resp.status == 201
    elsewhere = await create_tenant(client, admin)
    gold = await create_tenant(client, admin, parent_id=elsewhere["id"], config={"plan": "gold"})
    big = await create_tenant(client, admin, parent_id=elsewhere["id"], config={"seats": 3})
    fine = await create_tenant(client, admin, parent_id=elsewhere["id"], config={"seats": 2})
    before = await counts(db_conn)
    for mover, code in ((gold, "CONFIG_SCHEMA_CONFLICT"), (big, "BUDGET_EXCEEDED"), (fine, None)):
        resp = await client.post(f"/api/v1/tenants/{mover['id']}/move/preview",
                                 json={"new_parent_id": strict["id"]}, headers=admin)  # fmt: skip
        found = await resp.json()
        assert resp.status == 200, found
        if code is None:
            assert found["refused"] is None
            continue
        assert await counts(db_conn) == before
        error = await real_error(client, admin, "POST", f"/api/v1/tenants/{mover['id']}/move",
                                 {"new_parent_id": strict["id"]})  # fmt: skip
        assert found["refused"] == error
        assert error["code"] == code
    assert await counts(db_conn) == before


async def tree_state(conn: asyncpg.Connection) -> tuple[Any, ...]:
    """Everything a move rewrites, as one comparable value."""
    return (
        await counts(conn),
        await conn.fetchval(
            "SELECT md5(string_agg(concat_ws(':', id, parent_id, ancestry_path, depth), ','"
            " ORDER BY id)) FROM tenants"
        ),
        await conn.fetchval(
            "SELECT md5(string_agg(concat_ws(':', ancestor_id, descendant_id, depth), ','"
            " ORDER BY ancestor_id, descendant_id)) FROM tenant_closure"
        ),
    )


async def move_preview(client: TestClient, h: H, mover: str, new_parent: str) -> Any:
    resp = await client.post(f"/api/v1/tenants/{mover}/move/preview",
                             json={"new_parent_id": new_parent}, headers=h)  # fmt: skip
    found = await resp.json()
    assert resp.status == 200, found
    return found


async def test_move_previews_report_budgets_inside_the_moved_subtree(
    client: TestClient, admin: H, db_conn: asyncpg.Connection
) -> None:
    """A budget of the moved subtree resolves its value from the new ancestors: when
    they give it less than its children hold, the move and its preview refuse alike."""
    rich = await create_tenant(client, admin, config={"seats": 100})
    # Inherits its 100 seats from rich; its children hold 8 of them.
    inherits = await create_tenant(client, admin, parent_id=rich["id"])
    # Has 20 seats of its own; its children hold 12 of them.
    owns = await create_tenant(client, admin, parent_id=rich["id"], config={"seats": 20})
    for holder, allocations in ((inherits, (5, 3)), (owns, (8, 4))):
        resp = await client.put(f"/api/v1/tenants/{holder['id']}/config-budgets/seats", json={},
                                headers=admin)  # fmt: skip
        assert resp.status == 201, await resp.json()
        for seats in allocations:
            await create_tenant(client, admin, parent_id=holder["id"], config={"seats": seats})
    poor = await create_tenant(client, admin, config={"seats": 6})  # gives `inherits` 6 < 8
    strict = await create_tenant(client, admin)
    resp = await client.put(f"/api/v1/tenants/{strict['id']}/config/seats",
                            json={"value": 10, "locked": True}, headers=admin)  # fmt: skip
    assert resp.status in (200, 201), await resp.json()  # overrides the 20 of `owns`: 10 < 12
    roomy = await create_tenant(client, admin, config={"seats": 8})  # exactly what they hold

    before = await tree_state(db_conn)
    cases = ((inherits, poor, 8, 6), (owns, strict, 12, 10))
    for mover, target, allocated, capacity in cases:
        found = await move_preview(client, admin, mover["id"], target["id"])
        assert await tree_state(db_conn) == before
        assert found["refused"] == {
            "code": "BUDGET_EXCEEDED",
            "message": f"the children of tenant {mover['id']} would hold {allocated} of "
            f"'seats', past its {capacity}",
            "details": [
                {
                    "field": "value",
                    "message": f"{capacity - allocated} left",
                    "tenant_id": mover["id"],
                    "key": "seats",
                    "capacity": capacity,
                    "allocated": allocated,
                    "remaining": capacity - allocated,
                }
            ],
        }
        assert found["changed_tenants"] == 0
        assert found["changes"] == []
        error = await real_error(client, admin, "POST", f"/api/v1/tenants/{mover['id']}/move",
                                 {"new_parent_id": target["id"]})  # fmt: skip
        assert found["refused"] == error
        assert await tree_state(db_conn) == before

    fits = await move_preview(client, admin, inherits["id"], roomy["id"])
    assert fits["refused"] is None
    # Only the moved tenant's seats change (100 to 8): its children have their own.
    assert fits["changed_tenants"] == 1, fits
    assert fits["changes"][0]["tenant_id"] == inherits["id"]
    assert await tree_state(db_conn) == before
    resp = await client.post(f"/api/v1/tenants/{inherits['id']}/move",
                             json={"new_parent_id": roomy["id"]}, headers=admin)  # fmt: skip
    assert resp.status == 200, await resp.json()
