"""EXPLAIN of "who resolves to what" at 11,110 tenants: the subtree's tenants and the
key's entries each come from one ordered range scan (no sort, no sequential scan), and
the chain above from the closure index, so a page reads in proportion to its rows and
the entries of its range, never a walk of each tenant's chain."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import pytest

from service.db.queries import Queries
from tests.test_query_plans import GUARDED, big_db, conn, scans, tree

__all__ = ["big_db", "conn", "tree"]  # the fixtures, shared with test_query_plans

FORBIDDEN = {"Sort", "Hash Join", "Hash", "Materialize", "Incremental Sort"}


def actual_rows(plan: dict[str, Any], relation: str) -> int:
    """Rows the plan's nodes on relation returned (EXPLAIN ANALYZE), over all loops."""
    mine = plan.get("Relation Name") == relation
    rows = plan["Actual Rows"] * plan["Actual Loops"] if mine else 0
    return rows + sum(actual_rows(child, relation) for child in plan.get("Plans", []))


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_the_merge_reads_ordered_ranges(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    queries = Queries.load()
    root, mid, leaf = tree[0][3], tree[1][35], tree[3][3500]
    path = f"/{root}"
    cases: list[tuple[str, dict[str, object]]] = [
        ("stream_subtree_paths", {"path": path, "start": path}),
        ("stream_subtree_paths", {"path": path, "start": f"/{root}/{mid} "}),
        ("stream_range_entries_of_key", {"path": path, "key": "theme", "start": path}),
        ("stream_range_entries_of_key", {"path": path, "key": "theme", "start": f"{path}/{mid} "}),
        ("list_chain_entries_of_key", {"tenant_id": leaf, "key": "theme", "start": path}),
    ]
    for name, params in cases:
        query = queries[name]
        async with conn.transaction():
            if name != "list_chain_entries_of_key":  # the streams run after this
                await queries["plan_resolution_as_ordered_scans"].exec(conn)
            for _ in range(6):  # past the custom plans, to the generic one when forced
                plan = await conn.fetchval(
                    f"EXPLAIN (FORMAT JSON) {query.sql}", *query.args(**params)
                )
        nodes = scans(plan[0]["Plan"])
        guarded = GUARDED | {"tenant_config_holders"}
        assert not [r for n, r in nodes if n == "Seq Scan" and r in guarded], (name, nodes)
        if name != "list_chain_entries_of_key":  # a few ancestors, sorted: fine
            assert not {n for n, _ in nodes} & FORBIDDEN, (name, nodes)
        assert any("Index" in n for n, _ in nodes), (name, nodes)
    # A page of 51 tenants reads 51 rows of tenants, whatever the subtree's size.
    query = queries["stream_subtree_paths"]
    plan = await conn.fetchval(
        f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM ({query.sql}) AS q LIMIT 51",
        *query.args(path=path, start=path),
    )
    top = plan[0]["Plan"]
    assert top["Actual Rows"] == 51
    assert actual_rows(top, "tenants") <= 52
