"""EXPLAIN at 10,000+ tenants: the hot tree queries use indexes, never a sequential scan
of tenants or tenant_closure, with custom plans and with the generic plans prepared
statements settle on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from service.db.pool import connect
from service.db.queries import Queries
from tests.support.databases import create_database, drop_database
from tests.support.seeding import seed_balanced

GUARDED = {"tenants", "tenant_closure", "config_entries"}


@pytest.fixture(scope="module")
def big_db(admin_dsn: str, template_db: str) -> Any:
    dsn = create_database(admin_dsn, template_db)
    yield dsn
    drop_database(admin_dsn, dsn)


@pytest.fixture(scope="module")
def tree(big_db: str) -> list[list[UUID]]:
    async def seed() -> list[list[UUID]]:
        # COPY needs asyncpg's binary codecs, not the service's text jsonb codec.
        conn = await asyncpg.connect(big_db)
        try:
            levels = await seed_balanced(conn, roots=10, fanout=10, levels=3)
            # Config on about 30% of tenants (two keys each, every tenth one locked).
            await conn.execute(
                """
                INSERT INTO config_entries (tenant_id, key, value, locked)
                SELECT id, k, '"v"'::jsonb, random() < 0.1
                FROM tenants, unnest(ARRAY['theme', 'limits']) AS k
                WHERE random() < 0.3;
                ANALYZE config_entries;
                """
            )
            return levels
        finally:
            await conn.close()

    levels = asyncio.run(seed())
    assert sum(len(level) for level in levels) == 11_110
    return levels


@pytest.fixture
async def conn(big_db: str, tree: list[list[UUID]]) -> AsyncIterator[asyncpg.Connection]:
    connection = await connect(big_db)
    try:
        yield connection
    finally:
        await connection.close()


def scans(plan: dict[str, Any]) -> list[tuple[str, str]]:
    found = [(plan["Node Type"], plan.get("Relation Name", ""))]
    for child in plan.get("Plans", []):
        found += scans(child)
    return found


async def explain(
    conn: asyncpg.Connection, name: str, params: dict[str, object]
) -> list[tuple[str, str]]:
    query = Queries.load()[name]
    plan = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {query.sql}", *query.args(**params))
    return scans(plan[0]["Plan"])


def cases(tree: list[list[UUID]]) -> list[tuple[str, dict[str, object]]]:
    root, mid, leaf = tree[0][3], tree[1][42], tree[3][4321]

    def descendants(
        path: str, max_depth: int | None, archived: bool, after: str | None = None
    ) -> dict[str, object]:
        return {"path": path, "after": after, "max_depth": max_depth, "include_archived": archived}

    return [
        ("get_tenant", {"tenant_id": leaf}),
        ("get_tenant_by_slug", {"slug": f"s_{leaf.hex}"}),
        ("get_tenant_nodes", {"tenant_ids": [leaf, mid]}),
        (
            "list_children",
            dict(parent_id=mid, cursor_id=None, status_filter="active", page_size=51),
        ),
        (
            "list_children",
            dict(parent_id=root, cursor_id=tree[1][35], status_filter="all", page_size=None),
        ),
        (
            "list_children_json",
            dict(parent_id=mid, cursor_id=None, status_filter="active", page_size=50),
        ),
        (
            "list_children_json",
            dict(parent_id=root, cursor_id=tree[1][35], status_filter="all", page_size=None),
        ),
        ("list_ancestors_json", {"tenant_id": leaf, "visible_root_id": None}),
        ("list_ancestors_json", {"tenant_id": leaf, "visible_root_id": mid}),
        ("get_tenant_node", {"tenant_id": mid}),
        ("stream_descendants_json", descendants(f"/{tree[0][4]}/{mid}", None, False)),
        ("stream_descendants_json", descendants(f"/{root}", 2, True)),
        ("stream_descendants_json", descendants(f"/{root}", None, False, f"/{root}/{mid}")),
        ("count_descendants_capped", {**descendants(f"/{root}", None, False), "cap": 1001}),
        ("count_descendants_capped", {**descendants(f"/{root}", 2, True), "cap": 3}),
        ("list_tenants", dict(cursor_id=None, status_filter="active", page_size=51)),
        ("list_tenants", dict(cursor_id=tree[2][500], status_filter="all", page_size=101)),
        (
            "list_subtree_tenants",
            dict(root_id=mid, cursor_id=None, status_filter="active", page_size=51),
        ),
        ("has_active_children", {"tenant_id": mid}),
        ("subtree_height", {"tenant_id": mid}),
        ("find_locked_config_keys", {"tenant_id": leaf, "keys": ["theme", "limits"]}),
        ("check_config_write", {"tenant_id": leaf, "parent_id": mid, "key": "theme"}),
        ("check_config_write", {"tenant_id": root, "parent_id": None, "key": "theme"}),
        (
            "lock_config_budgets_with_schemas",
            {"tenant_id": leaf, "parent_ids": [mid], "keys": ["limits"]},
        ),
        ("list_root_tenants", dict(cursor_id=tree[0][2], status_filter="active", page_size=101)),
        ("count_children", {"parent_ids": [root, mid, leaf], "include_archived": False}),
    ]


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_hot_queries_use_indexes(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    for name, params in cases(tree):
        plan = await explain(conn, name, params)
        seq = [rel for node, rel in plan if node == "Seq Scan" and rel in GUARDED]
        assert not seq, f"{name} ({plan_mode}) scans {seq} sequentially: {plan}"
        assert any("Index" in node for node, _ in plan), f"{name} uses no index: {plan}"


def loops(plan: dict[str, Any], relation: str, probe: bool) -> int:
    """How many times the plan's nodes on `relation` ran (EXPLAIN ANALYZE): its
    index-only scans (probe) or its other scans."""
    mine = plan.get("Relation Name") == relation
    own = plan["Actual Loops"] if mine and (plan["Node Type"] == "Index Only Scan") == probe else 0
    return own + sum(loops(child, relation, probe) for child in plan.get("Plans", []))


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_descendant_documents_aggregate_config_only_of_tenants_that_have_some(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    """A listed tenant without entries costs no probe of config_entries: the tenants of
    the range that have entries come from one range scan of tenant_config_holders
    (migration 0028), merged with the list's; config_entries is read once per listed
    tenant that has entries, and never probed for the others. Whatever the size of the
    subtree, the join is a merge of two ordered scans: never a nested loop (a rescan of
    the holders' range per listed tenant), a hash or a sort (nothing streamed before the
    whole list is read)."""
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    root, mid = tree[0][3], tree[1][35]
    mid_path = f"/{root}/{mid}"
    queries = Queries.load()
    query = queries["stream_descendants_json"]
    subtrees: dict[tuple[str, str | None], int | None] = {  # path, after: how many listed
        (f"/{root}", None): 1110,
        (mid_path, None): 110,
        (f"{mid_path}/{tree[2][350]}", None): 10,
        (f"{mid_path}/{tree[2][350]}/{tree[3][3500]}", None): 0,
        (f"/{root}", f"{mid_path}/{tree[2][359]}"): None,  # a page: whatever follows
    }
    for (path, after), expected in subtrees.items():
        args = query.args(path=path, after=after, max_depth=None, include_archived=False)
        async with conn.transaction():
            await queries["plan_descendants_as_merges"].exec(conn)
            for _ in range(6):  # past the custom plans, to the generic one when forced
                plan = await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {query.sql}", *args)
        top = plan[0]["Plan"]
        listed, with_entries = await conn.fetchrow(
            "SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM config_entries ce"
            " WHERE ce.tenant_id = t.id)) FROM tenants t"
            " WHERE t.ancestry_path > coalesce($2, $1 || '/') AND t.ancestry_path < $1 || '0'",
            path,
            after,
        )
        assert top["Actual Rows"] == listed == (listed if expected is None else expected)
        if listed > 100:
            assert 0 < with_entries < listed * 0.8  # about half: two keys at 30% each
        nodes = {node for node, _ in scans(top)}
        assert (top["Node Type"], top["Join Type"]) == ("Merge Join", "Left"), top
        assert not nodes & {"Nested Loop", "Hash Join", "Sort", "Materialize"}, nodes
        assert loops(top, "config_entries", probe=True) == 0
        assert loops(top, "config_entries", probe=False) == with_entries
        holders = loops(top, "tenant_config_holders", probe=True)
        assert holders == (1 if listed else 0)  # no outer row: the inner scan never runs
