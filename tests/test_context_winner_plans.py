"""The inheritance rules and the tenant document are each stated once, in SQL functions
(migration 0052), and the planner inlines every one of them: no query that uses them
shows a Function Scan or a call of one of them in its plan, and the context queries
read the same indexes as when the rules were written out in each query."""

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
from tests.support.plans import nodes
from tests.support.seeding import seed_balanced

FUNCTIONS = (
    "tenant_context_document",
    "context_document",
    "context_config_winners",
    "context_permission_winners",
    "config_entry_rank",
    "permission_policy_counts",
    "permission_policy_rank",
    "assemble_tenant_document",
)
GUARDED = {"tenants", "tenant_closure", "config_entries", "permission_policies"}
# What resolve_tenant_context and render_tenant_context read: the chain by
# tenant_closure_descendant_idx, each ancestor's entries and policies by primary key.
CONTEXT_INDEXES = {
    "tenants_pkey",
    "tenant_closure_descendant_idx",
    "config_entries_pkey",
    "permission_policies_pkey",
}
# Entries and policies on about two tenants in three (tables of a size the planner reads
# by index): a lock on about one entry in seven, a LOCKED or LOCAL mode on some policies.
ENTRIES = """
INSERT INTO config_entries (tenant_id, key, value, locked)
SELECT id, k, to_jsonb(k), (hashtext(id::text || k) % 7) = 0
FROM tenants, unnest(ARRAY['theme', 'limits', 'region.default']) AS k
WHERE hashtext(id::text) % 3 <> 1;
INSERT INTO permission_policies (tenant_id, key, value, mode)
SELECT id, k, true,
       (ARRAY['INHERIT', 'LOCKED', 'LOCAL'])[1 + (hashtext(id::text || k) & 2147483647) % 3]
FROM tenants, unnest(ARRAY['billing.read', 'users.write']) AS k
WHERE hashtext(id::text) % 3 <> 0;
ANALYZE config_entries;
ANALYZE permission_policies;
"""


@pytest.fixture(scope="module")
def plan_db(admin_dsn: str, template_db: str) -> Any:
    dsn = create_database(admin_dsn, template_db)
    yield dsn
    drop_database(admin_dsn, dsn)


@pytest.fixture(scope="module")
def tree(plan_db: str) -> list[list[UUID]]:
    async def seed() -> list[list[UUID]]:
        conn = await asyncpg.connect(plan_db)
        try:
            levels = await seed_balanced(conn, roots=8, fanout=8, levels=3)
            await conn.execute(ENTRIES)
            return levels
        finally:
            await conn.close()

    return asyncio.run(seed())


@pytest.fixture
async def conn(plan_db: str, tree: list[list[UUID]]) -> AsyncIterator[asyncpg.Connection]:
    connection = await connect(plan_db)
    try:
        yield connection
    finally:
        await connection.close()


async def plan_of(
    conn: asyncpg.Connection, sql: str, args: list[Any], *, guarded: bool = True
) -> list[dict[str, Any]]:
    """The plan's nodes, once it is shown to call none of FUNCTIONS (VERBOSE prints every
    expression, so a call that was not inlined would show its name) and, when guarded,
    to read no table of GUARDED sequentially."""
    explained = await conn.fetchval(f"EXPLAIN (VERBOSE, FORMAT JSON) {sql}", *args)
    found = nodes(explained[0]["Plan"])
    text = str(explained)
    called = [name for name in FUNCTIONS if name in text]
    assert not called, f"not inlined: {called}"
    scanned = [n.get("Function Name") for n in found if n["Node Type"] == "Function Scan"]
    assert not set(scanned) & set(FUNCTIONS), scanned  # unnest() and the like may stay
    seq = [n.get("Relation Name") for n in found if n["Node Type"] == "Seq Scan"]
    assert not (guarded and set(seq) & GUARDED), f"sequential scans of {seq}"
    return found


def indexes(found: list[dict[str, Any]]) -> set[str]:
    """The indexes the plan reads (index names are unique, so each names its table)."""
    return {n["Index Name"] for n in found if "Index Name" in n}


def cases(tree: list[list[UUID]]) -> list[tuple[str, dict[str, object]]]:
    # mid is the second child of tree[0][1]; the move preview takes it to another root.
    other_root, mid, leaf = tree[0][2], tree[1][9], tree[3][300]
    page = {"after_id": UUID(int=0), "row_limit": 100}
    return [
        ("find_locked_config_keys", {"tenant_id": leaf, "keys": ["theme", "limits"]}),
        ("find_locked_permission_keys", {"tenant_id": leaf, "keys": ["billing.read"]}),
        (
            "preview_config_change",
            {"tenant_id": mid, "key": "theme", "new_value": '"x"', "new_locked": True,
             "new_sensitive": False, "removing": False, **page},
        ),
        (
            "preview_permission_change",
            {"tenant_id": mid, "key": "users.write", "new_value": False,
             "new_mode": "LOCKED", "removing": False, **page},
        ),
        ("preview_move", {"tenant_id": mid, "new_parent_id": other_root, **page}),
        ("render_tenant_context_at", {"tenant_id": leaf, "revision": None, "at": None}),
        (
            "list_children_json",
            {"parent_id": mid, "cursor_id": None, "status_filter": "active", "page_size": 50},
        ),
        ("list_ancestors_json", {"tenant_id": leaf, "visible_root_id": None}),
        (
            "stream_descendants_json",
            {"path": f"/{tree[0][1]}/{mid}", "after": None, "max_depth": None,
             "include_archived": False},
        ),
    ]  # fmt: skip


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_the_context_reads_the_same_indexes_through_the_winners(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    leaf = tree[3][300]
    for name in ("resolve_tenant_context", "render_tenant_context"):
        query = Queries.load()[name]
        found = await plan_of(conn, query.sql, query.args(tenant_id=leaf))
        assert indexes(found) == CONTEXT_INDEXES, (name, plan_mode, indexes(found))
    for name, params in (
        ("render_tenant_contexts", {"tenant_ids": [leaf, tree[2][7]]}),
        ("stream_subtree_contexts", {"path": f"/{tree[0][1]}/{tree[1][9]}"}),
    ):
        query = Queries.load()[name]
        found = await plan_of(conn, query.sql, query.args(**params))
        assert indexes(found) >= CONTEXT_INDEXES - {"tenants_pkey"}, (name, indexes(found))
    # The winners alone, as tenant_context_document and context_document call them.
    for function, table in (
        ("context_config_winners", "config_entries"),
        ("context_permission_winners", "permission_policies"),
    ):
        found = await plan_of(conn, f"SELECT * FROM {function}($1) AS w", [leaf])
        assert indexes(found) == {"tenant_closure_descendant_idx", f"{table}_pkey"}, (
            function,
            plan_mode,
            indexes(found),
        )


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_every_query_stating_the_rules_inlines_them(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    async with conn.transaction():
        for name, params in cases(tree):
            query = Queries.load()[name]
            if name == "stream_descendants_json":
                plan_merges = Queries.load()["plan_descendants_as_merges"]
                await conn.execute(plan_merges.sql)
            # A small tree: which scans the planner picks is test_query_plans' business.
            found = await plan_of(conn, query.sql, query.args(**params), guarded=False)
            assert found, name


async def test_the_winners_resolve_as_the_context_does(
    conn: asyncpg.Connection, tree: list[list[UUID]]
) -> None:
    """Per key, a lock beats every unlocked entry and the highest lock wins, else the
    nearest entry; a LOCKED policy nearest the root wins, else the nearest, ancestors'
    LOCAL ones left out: checked against every candidate on the chain of each leaf."""
    rows = await conn.fetch(
        """
        WITH leaves AS (SELECT id FROM tenants WHERE depth = 3 ORDER BY id LIMIT 200),
        config_candidates AS (
            SELECT l.id AS leaf, ce.key, ce.tenant_id, ce.locked, c.depth
            FROM leaves l
            JOIN tenant_closure c ON c.descendant_id = l.id
            JOIN config_entries ce ON ce.tenant_id = c.ancestor_id
        ),
        config_expected AS (
            SELECT DISTINCT ON (leaf, key) leaf, key, tenant_id
            FROM config_candidates
            ORDER BY leaf, key, locked DESC, CASE WHEN locked THEN -depth ELSE depth END
        ),
        permission_candidates AS (
            SELECT l.id AS leaf, pp.key, pp.tenant_id, pp.mode, c.depth
            FROM leaves l
            JOIN tenant_closure c ON c.descendant_id = l.id
            JOIN permission_policies pp ON pp.tenant_id = c.ancestor_id
            WHERE c.depth = 0 OR pp.mode <> 'LOCAL'
        ),
        permission_expected AS (
            SELECT DISTINCT ON (leaf, key) leaf, key, tenant_id
            FROM permission_candidates
            ORDER BY leaf, key, (mode = 'LOCKED') DESC,
                     CASE WHEN mode = 'LOCKED' THEN -depth ELSE depth END
        ),
        got AS (
            SELECT l.id AS leaf, 'config' AS kind, w.key, w.source_tenant_id AS tenant_id
            FROM leaves l CROSS JOIN LATERAL context_config_winners(l.id) w
            UNION ALL
            SELECT l.id, 'permission', p.key, p.source_tenant_id
            FROM leaves l CROSS JOIN LATERAL context_permission_winners(l.id) p
        ),
        expected AS (
            SELECT leaf, 'config' AS kind, key, tenant_id FROM config_expected
            UNION ALL
            SELECT leaf, 'permission', key, tenant_id FROM permission_expected
        )
        SELECT (SELECT count(*) FROM got) AS winners,
               (SELECT count(*) FROM ((SELECT * FROM got EXCEPT ALL SELECT * FROM expected)
                 UNION ALL (SELECT * FROM expected EXCEPT ALL SELECT * FROM got)) AS d)
                 AS differences
        """
    )
    assert rows[0]["winners"] > 100
    assert rows[0]["differences"] == 0
