"""EXPLAIN of "who resolves to what" at 11,110 tenants: an ordered range scan of the path
index with one bounded probe of the chain per listed tenant, no sort and no sequential
scan, so a page costs work in proportion to its rows, not to the subtree."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import pytest

from service.db.queries import Queries
from tests.test_query_plans import GUARDED, big_db, conn, scans, tree

__all__ = ["big_db", "conn", "tree"]  # the fixtures, shared with test_query_plans


def actual(plan: dict[str, Any], relation: str) -> tuple[int, int]:
    """(rows, loops) summed over the plan's nodes on relation (EXPLAIN ANALYZE)."""
    mine = plan.get("Relation Name") == relation
    rows = plan["Actual Rows"] * plan["Actual Loops"] if mine else 0
    runs = plan["Actual Loops"] if mine else 0
    for child in plan.get("Plans", []):
        more = actual(child, relation)
        rows, runs = rows + more[0], runs + more[1]
    return rows, runs


def outer_nodes(plan: dict[str, Any]) -> set[str]:
    """Node types outside the per-tenant LATERAL (its Limit and what lies below it: a
    sort of one tenant's chain, a few rows)."""
    if plan["Node Type"] == "Limit":
        return set()
    found = {plan["Node Type"]}
    for child in plan.get("Plans", []):
        found |= outer_nodes(child)
    return found


def params(path: str, **filters: Any) -> dict[str, object]:
    return {
        "path": path,
        "key": filters.pop("key", "theme"),
        "start": filters.pop("start", path),
        "value": filters.pop("value", None),
        "source_tenant_id": filters.pop("source_tenant_id", None),
        "inherited": filters.pop("inherited", None),
        "locked": filters.pop("locked", None),
    }


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_a_page_reads_only_its_rows(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    query = Queries.load()["stream_resolved_key_json"]
    root, mid = tree[0][3], tree[1][35]
    # Every tenant has the key from its root, so every row of the range is listed.
    await conn.execute(
        "INSERT INTO config_entries (tenant_id, key, value) SELECT id, 'theme', '\"base\"'"
        " FROM tenants WHERE parent_id IS NULL ON CONFLICT (tenant_id, key) DO NOTHING"
    )
    cases = [
        params(f"/{root}"),
        params(f"/{root}", start=f"/{root}/{mid} "),
        params(f"/{root}", value="v", inherited=False),
        params(f"/{root}", locked=True, source_tenant_id=root),
    ]
    for args in cases:
        for _ in range(6):  # past the custom plans, to the generic one when forced
            plan = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {query.sql}", *query.args(**args))
        nodes = scans(plan[0]["Plan"])
        assert not [r for n, r in nodes if n == "Seq Scan" and r in GUARDED], nodes
        outer = outer_nodes(plan[0]["Plan"])
        assert not outer & {"Sort", "Hash Join", "Hash", "Materialize", "Merge Join"}, nodes
        assert plan[0]["Plan"]["Node Type"] == "Nested Loop", nodes
    # A page of 51 unfiltered rows: 51 tenants read, one chain probe each.
    args = query.args(**params(f"/{root}"))
    plan = await conn.fetchval(
        f"EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM ({query.sql}) AS q LIMIT 51", *args
    )
    top = plan[0]["Plan"]
    assert top["Actual Rows"] == 51
    tenants_rows, _ = actual(top, "tenants")
    closure_rows, closure_runs = actual(top, "tenant_closure")
    assert tenants_rows <= 52, top
    assert closure_runs <= 52
    assert closure_rows <= 52 * 4  # depth 3 at most: four ancestors (itself included)
