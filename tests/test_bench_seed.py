"""The benchmark's seeding (bench/seed.py) writes a forest the service itself would
have written: tree invariants hold, every constraint and index of the migrations is back
after the bulk load, locked entries are never overridden below, and the same seed gives
the same forest. The benchmarks themselves are never part of the test run."""

from __future__ import annotations

import json

import asyncpg

from bench.results import DepthPick
from bench.seed import seed_database
from bench.shapes import SeedPlan, build_forest
from bench.sqlcompare import (
    build_ltree,
    context_answer,
    drop_ltree,
    time_operation,
)
from bench.sqlfiles import bench_queries
from service.db.queries import Queries
from tests.support.invariants import tree_problems

LOADED = """
ARRAY['tenants', 'tenant_closure', 'config_entries', 'permission_policies',
      'tenant_history', 'config_history', 'permission_history', 'config_history_keys',
      'permission_history_keys']::regclass[]
"""
SCHEMA = f"""
SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = ANY ({LOADED}) OR confrelid = 'tenants'::regclass
UNION ALL
SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index
WHERE indrelid = ANY ({LOADED})
UNION ALL
SELECT 'trigger ' || tgrelid::regclass::text || ' ' || tgname || ' ' || tgenabled::text
FROM pg_trigger WHERE tgrelid = ANY ({LOADED}) AND NOT tgisinternal
ORDER BY 1
"""

LOCK_OVERRIDDEN = """
SELECT count(*) FROM config_entries below
JOIN tenant_closure c ON c.descendant_id = below.tenant_id AND c.depth > 0
JOIN config_entries above ON above.tenant_id = c.ancestor_id AND above.key = below.key
WHERE above.locked
"""


async def test_seeded_forest_is_one_the_service_could_have_written(fresh_db_url) -> None:
    conn = await asyncpg.connect(fresh_db_url)
    try:
        schema_before = [r[0] for r in await conn.fetch(SCHEMA)]
        report = await seed_database(fresh_db_url, SeedPlan.for_total(3_000))
        assert [r[0] for r in await conn.fetch(SCHEMA)] == schema_before
        assert await tree_problems(conn) == []
        assert report.tenants == await conn.fetchval("SELECT count(*) FROM tenants")
        assert report.tenants >= 3_000
        assert await conn.fetchval(LOCK_OVERRIDDEN) == 0
        assert await conn.fetchval("SELECT max(depth) FROM tenants") == 31
        ctx = report.landmarks["context_d10"]
        assert report.depths["context_d10"] == 10
        per_level = await conn.fetch(
            "SELECT c.depth, count(*) FROM tenant_closure c "
            "JOIN config_entries e ON e.tenant_id = c.ancestor_id "
            "WHERE c.descendant_id = $1::uuid GROUP BY c.depth ORDER BY c.depth",
            ctx,
        )
        assert [tuple(r) for r in per_level] == [(d, 20) for d in range(11)]
    finally:
        await conn.close()


HISTORY_COUNTS = """
SELECT (SELECT count(*) FROM context_revisions) AS revisions,
       (SELECT count(*) FROM context_revision_tenants) AS revision_log,
       (SELECT count(*) FROM tenants) AS tenants,
       (SELECT count(*) FROM tenant_history
        WHERE valid_from = 0 AND valid_to = 9223372036854775807) AS tenant_versions,
       (SELECT count(*) FROM config_entries) AS entries,
       (SELECT count(*) FROM config_history
        WHERE valid_from = 0 AND valid_to = 9223372036854775807) AS entry_versions,
       (SELECT count(*) FROM config_history_keys) AS entry_keys,
       (SELECT count(*) FROM permission_policies) AS policies,
       (SELECT count(*) FROM permission_history
        WHERE valid_from = 0 AND valid_to = 9223372036854775807) AS policy_versions,
       (SELECT count(*) FROM permission_history_keys) AS policy_keys
"""


async def test_a_seeded_database_has_its_history_started(fresh_db_url) -> None:
    """The seeded tenants existed before the history began, as the tenants that existed
    when migration 0044 started it: no revision holds them (the seed's triggers did not
    note them), the history holds one open version of each row from the horizon, an as-of
    context at the horizon is the live one, and the next write is revision 1 and is
    recorded as any write is."""
    report = await seed_database(fresh_db_url, SeedPlan.for_total(2_000))
    queries = Queries.load()
    tenant = report.landmarks["context_d10"]
    conn = await asyncpg.connect(fresh_db_url)
    try:
        counts = await conn.fetchrow(HISTORY_COUNTS)
        assert counts["revisions"] == counts["revision_log"] == 0
        assert counts["tenant_versions"] == counts["tenants"] == report.tenants
        assert counts["entry_versions"] == counts["entry_keys"] == counts["entries"] > 0
        assert counts["policy_versions"] == counts["policy_keys"] == counts["policies"] > 0
        bounds = await queries["history_bounds"].one(conn, at=None)
        assert (bounds["kept_from"], bounds["newest"]) == (0, 0)
        assert bounds["kept_since"] <= await conn.fetchval("SELECT now()")

        live = await queries["render_tenant_context"].one(conn, tenant_id=tenant)
        at = await queries["render_tenant_context_at"].one(
            conn, revision=None, at=None, tenant_id=tenant
        )
        assert at["revision"] == 0
        assert json.loads(at["document"]) == json.loads(live["document"])

        # The revision triggers are back on: a write is revision 1, its history a new
        # version, and the seeded one still answers at the horizon.
        key = await conn.fetchval(
            "SELECT key FROM config_entries WHERE tenant_id = $1::uuid AND NOT sensitive "
            "ORDER BY key LIMIT 1",
            tenant,
        )
        await conn.execute(
            "UPDATE config_entries SET value = '\"changed\"', updated_at = now() "
            "WHERE tenant_id = $1::uuid AND key = $2",
            tenant,
            key,
        )
        assert await conn.fetchval("SELECT max(revision) FROM context_revisions") == 1
        versions = await conn.fetch(
            "SELECT valid_from, valid_to FROM config_history "
            "WHERE tenant_id = $1::uuid AND key = $2 ORDER BY valid_from",
            tenant,
            key,
        )
        assert [tuple(v) for v in versions] == [(0, 1), (1, 9223372036854775807)]
        before = await queries["render_tenant_context_at"].one(
            conn, revision=0, at=None, tenant_id=tenant
        )
        assert json.loads(before["document"]) == json.loads(live["document"])
        after = await queries["render_tenant_context_at"].one(
            conn, revision=1, at=None, tenant_id=tenant
        )
        now = await queries["render_tenant_context"].one(conn, tenant_id=tenant)
        assert json.loads(after["document"]) == json.loads(now["document"])
        assert json.loads(now["document"])["resolved_config"][key]["value"] == "changed"
    finally:
        await conn.close()


def test_the_same_seed_gives_the_same_forest() -> None:
    plan = SeedPlan.for_total(2_000)
    first, second = build_forest(plan), build_forest(plan)
    assert first.ids == second.ids
    assert first.parents == second.parents
    assert first.config == second.config
    assert build_forest(SeedPlan.for_total(2_000, seed=7)).ids != first.ids


async def test_the_sql_comparison_contexts_are_the_services_own(fresh_db_url) -> None:
    """The recursive CTE and ltree copies of the context query answer what the service's
    own query answers for a tenant with config and permissions at every level (a column
    added to one and not the others shows here, not as a quiet "NO" in a bench table)."""
    report = await seed_database(fresh_db_url, SeedPlan.for_total(3_000))
    conn = await asyncpg.connect(fresh_db_url)
    q = bench_queries()
    ltree = await build_ltree(conn, q)
    try:
        statements = {
            "closure": Queries.load()["resolve_tenant_context"],
            "cte": q["cte_resolve_tenant_context"],
        }
        if ltree.available:
            statements["ltree"] = q["ltree_resolve_tenant_context"]
        pick = DepthPick(target=10, id=report.landmarks["context_d10"], depth=10)
        figures, answer = await time_operation(conn, statements, pick, context_answer, 1)
    finally:
        await drop_ltree(conn, q, ltree)
        await conn.close()
    assert figures.disagreeing == []
    assert len(answer[0]["config"]) == 10 + 11 * 10  # shared keys and each level's own
