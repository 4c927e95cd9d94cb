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


async def explain(conn: asyncpg.Connection, name: str, *args: object) -> list[tuple[str, str]]:
    sql = Queries.load().sql(name)
    plan = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {sql}", *args)
    return scans(plan[0]["Plan"])


def cases(tree: list[list[UUID]]) -> list[tuple[str, tuple[object, ...]]]:
    root, mid, leaf = tree[0][3], tree[1][42], tree[3][4321]
    return [
        ("get_tenant", (leaf,)),
        ("get_tenant_by_slug", (f"s_{leaf.hex}",)),
        ("get_tenant_nodes", ([leaf, mid],)),
        ("list_children", (mid, None, "active", 51)),
        ("list_children", (root, tree[1][35], "all", None)),
        ("list_children_json", (mid, None, "active", 50)),
        ("list_children_json", (root, tree[1][35], "all", None)),
        ("list_ancestors_json", (leaf, None)),
        ("list_ancestors_json", (leaf, mid)),
        ("get_tenant_node", (mid,)),
        ("list_descendants_json", (f"/{tree[0][4]}/{mid}", None, False)),
        ("list_descendants_json", (f"/{root}", 2, True)),
        ("list_tenants", (None, "active", 51)),
        ("list_tenants", (tree[2][500], "all", 101)),
        ("list_subtree_tenants", (mid, None, "active", 51)),
        ("has_active_children", (mid,)),
        ("subtree_height", (mid,)),
        ("find_locked_config_keys", (leaf, ["theme", "limits"])),
        ("list_root_tenants", (tree[0][2], "active", 101)),
        ("count_children", ([root, mid, leaf], False)),
    ]


@pytest.mark.parametrize("plan_mode", ["auto", "force_generic_plan"])
async def test_hot_queries_use_indexes(
    conn: asyncpg.Connection, tree: list[list[UUID]], plan_mode: str
) -> None:
    await conn.execute(f"SET plan_cache_mode = {plan_mode}")
    for name, args in cases(tree):
        plan = await explain(conn, name, *args)
        seq = [rel for node, rel in plan if node == "Seq Scan" and rel in GUARDED]
        assert not seq, f"{name} ({plan_mode}) scans {seq} sequentially: {plan}"
        assert any("Index" in node for node, _ in plan), f"{name} uses no index: {plan}"
