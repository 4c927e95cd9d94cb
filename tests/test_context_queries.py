"""The context query: indexes at depth 10 and one round trip whatever the depth."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from service.db.queries import Queries
from service.http.appkeys import DATABASE
from tests.conftest import JWT_SECRET
from tests.support.api import create_chain
from tests.support.entries import context, put_config, put_permission
from tests.support.keys import bearer, make_token

# Other trees around the chain, so the planner sees tables of a realistic size.
BULK_TREES = """
WITH ids AS (SELECT svc_uuid7() AS id, g FROM generate_series(1, $1::int) AS g),
new_tenants AS (
    INSERT INTO tenants (id, name, slug, ancestry_path, depth, isolation_strategy, region)
    SELECT id, 'bulk', 'bulk_' || g, '/' || id, 0, 'SHARED_RLS', 'default' FROM ids
    RETURNING id
),
closure AS (
    INSERT INTO tenant_closure (ancestor_id, descendant_id, depth)
    SELECT id, id, 0 FROM new_tenants
    RETURNING descendant_id
),
config AS (
    INSERT INTO config_entries (tenant_id, key, value)
    SELECT descendant_id, 'key' || k, to_jsonb(k) FROM closure, generate_series(1, 4) AS k
    RETURNING 1
)
INSERT INTO permission_policies (tenant_id, key, value)
SELECT id, 'perm' || k, true FROM new_tenants, generate_series(1, 2) AS k
"""
# The masked context a GET answers is rendered whole by PostgreSQL; the revealed one is
# resolved into records and decrypted in Python. Both resolve the same way.
CONTEXT = Queries.load()["render_tenant_context"]
REVEAL = Queries.load()["resolve_tenant_context"]
CONTEXT_SQL = CONTEXT.sql
REVEAL_SQL = REVEAL.sql
POOL_RESET = "SELECT pg_advisory_unlock_all()"
TABLES = {"tenants", "tenant_closure", "config_entries", "permission_policies"}


@pytest.fixture
def settings_env() -> dict[str, str]:
    # One pooled connection: every statement the app sends passes the query logger.
    return {"DB_POOL_MIN_SIZE": "1", "DB_POOL_MAX_SIZE": "1"}


async def _chain_with_entries(client: Any, headers: dict[str, str], length: int) -> list[Any]:
    chain = await create_chain(client, headers, length)
    # Leaf first: the lock at level 3 is set after the entries below it exist.
    for index, tenant in reversed(list(enumerate(chain))):
        await put_config(client, headers, tenant["id"], f"level{index}", index, expect=201)
        await put_config(client, headers, tenant["id"], "shared", index, expect=201,
                         locked=index == 3)  # fmt: skip
        await put_permission(client, headers, tenant["id"], "perm", index % 2 == 0,
                             "LOCAL" if index == 5 else None, expect=201)  # fmt: skip
    return chain


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [plan]
    for child in plan.get("Plans", []):
        nodes.extend(_plan_nodes(child))
    return nodes


async def test_explain_uses_indexes_at_depth_10(client, admin) -> None:
    chain = await _chain_with_entries(client, admin, 11)
    leaf = chain[-1]
    assert leaf["depth"] == 10
    locked = Queries.load()["find_locked_permission_keys"]
    async with client.app[DATABASE].connection() as conn:
        await conn.execute(BULK_TREES, 5000)
        await conn.execute("ANALYZE")
        # Custom plans, and the generic plans prepared statements settle on.
        for mode in ("auto", "force_generic_plan"):
            await conn.execute(f"SET plan_cache_mode = {mode}")
            for query in (CONTEXT, REVEAL):
                plan = await conn.fetchval(
                    "EXPLAIN (FORMAT JSON) " + query.sql, *query.args(tenant_id=leaf["id"])
                )
                nodes = _plan_nodes(plan[0]["Plan"])
                scans = {
                    (n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes
                }
                assert not [s for s in scans if s[0] == "Seq Scan"], (mode, scans)
                indexed = {rel for kind, rel, index in scans if index is not None and rel in TABLES}
                assert indexed == TABLES, (mode, scans)
                closure = ("Index Only Scan", "tenant_closure", "tenant_closure_descendant_idx")
                assert closure in scans
            plan = await conn.fetchval(
                "EXPLAIN (FORMAT JSON) " + locked.sql,
                *locked.args(tenant_id=leaf["parent_id"], keys=["perm", "other"]),
            )
            kinds = {n["Node Type"] for n in _plan_nodes(plan[0]["Plan"])}
            assert "Seq Scan" not in kinds, (mode, kinds)
        await conn.execute("RESET plan_cache_mode")


async def test_round_trips_do_not_grow_with_depth(client, admin) -> None:
    chain = await _chain_with_entries(client, admin, 21)
    token = bearer(make_token(JWT_SECRET, scopes=["read"]))  # JWT: no key lookup queries
    statements: list[str] = []
    async with client.app[DATABASE].connection() as conn:
        conn.add_query_logger(lambda record: statements.append(record.query))
    counts: dict[int, int] = {}
    for depth in (0, 1, 5, 10, 20):
        statements.clear()
        document = await context(client, token, chain[depth]["id"])
        await asyncio.sleep(0.01)  # loggers are called soon after each statement
        assert document["depth"] == depth
        assert len(document["resolved_config"]) == depth + 2
        counts[depth] = len(statements)
        # Besides asyncpg's own reset when the connection goes back to the pool, the
        # request sent exactly one statement: the context query.
        ours = [q for q in statements if not q.startswith(POOL_RESET)]
        assert ours == [CONTEXT_SQL], statements
    assert len(set(counts.values())) == 1, counts
