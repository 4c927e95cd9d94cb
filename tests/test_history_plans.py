"""EXPLAIN over a long history: naming a moment by time reads one entry of
history_revisions however far back the moment lies (30 days at 100 writes a minute is
4.3 million revisions; a filtered max(revision) walked back over all those since), and an
as-of context reads its chain's keys and versions by index, never a whole table."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta

import asyncpg
import orjson
import pytest

from service.db.pool import connect
from service.db.queries import Queries
from tests.support.databases import create_database, drop_database
from tests.support.plans import nodes

REVISIONS = 200_000
START = datetime(2026, 1, 1, tzinfo=UTC)
STEP = timedelta(seconds=0.6)


@pytest.fixture(scope="module")
def long_history(admin_dsn: str, template_db: str) -> Iterator[str]:
    dsn = create_database(admin_dsn, template_db)

    async def fill() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(
                "INSERT INTO history_revisions (revision, committed_at, audit_ids)"
                " SELECT g, $1::timestamptz + g * $2::interval, '{}'"
                " FROM generate_series(1, $3::integer) AS g",
                START, STEP, REVISIONS,
            )  # fmt: skip
            await conn.execute("ANALYZE history_revisions")
        finally:
            await conn.close()

    asyncio.run(fill())
    yield dsn
    drop_database(admin_dsn, dsn)


@pytest.fixture
async def conn(long_history: str) -> AsyncIterator[asyncpg.Connection]:
    connection = await connect(long_history)
    try:
        yield connection
    finally:
        await connection.close()


@pytest.mark.parametrize("revision", [REVISIONS - 10, REVISIONS // 2, 5])
async def test_the_revision_at_a_time_is_one_probe(conn: asyncpg.Connection, revision: int) -> None:
    query = Queries.load()["history_bounds"]
    at = START + revision * STEP + STEP / 2
    assert (await query.one(conn, at=at))["at_revision"] == revision
    for generic in (False, True):
        await conn.execute(f"SET plan_cache_mode = {'force_generic_plan' if generic else 'auto'}")
        plan = await conn.fetchval(
            f"EXPLAIN (ANALYZE, FORMAT JSON) {query.sql}", *query.args(at=at)
        )
        scans = [n for n in nodes(plan[0]["Plan"]) if n.get("Relation Name") == "history_revisions"]
        assert [(n["Node Type"], n["Index Name"]) for n in scans] == [
            ("Index Only Scan", "history_revisions_committed_at_idx")
        ], scans
        assert scans[0]["Actual Rows"] == 1
        assert scans[0].get("Rows Removed by Filter", 0) == 0


async def test_an_as_of_context_reads_its_chain_by_index(conn: asyncpg.Connection) -> None:
    """Each chain member's keys and versions by index ranges and probes, with 20,000 other
    tenants' keys in the tables: never a scan of a whole history table."""
    chain = [uuid.uuid4() for _ in range(3)]
    path = ""
    for depth, tenant in enumerate(chain):
        path += f"/{tenant}"
        await conn.execute(
            "INSERT INTO tenant_history (tenant_id, valid_from, name, slug, ancestry_path,"
            " depth, metadata, isolation_strategy, region, status, created_at, updated_at)"
            " VALUES ($1, 1, 'T', $2, $3, $4, '{}', 'SHARED_RLS', 'default', 'active',"
            " now(), now())",
            tenant, f"t{depth}-{tenant.hex[:8]}", path, depth,
        )  # fmt: skip
    await conn.execute(
        "INSERT INTO config_history_keys (tenant_id, key)"
        " SELECT gen_random_uuid(), 'k' || g % 4 FROM generate_series(1, 20000) AS g"
    )
    await conn.execute(
        "INSERT INTO tenant_history (tenant_id, valid_from, name, slug, ancestry_path, depth,"
        " metadata, isolation_strategy, region, status, created_at, updated_at)"
        " SELECT id, 1, 'T', 's' || id, '/' || id, 0, '{}', 'SHARED_RLS', 'default', 'active',"
        " now(), now() FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 20000)) AS x"
    )
    for tenant in chain:
        await conn.execute(
            "INSERT INTO config_history_keys (tenant_id, key) SELECT $1, 'k' || g"
            " FROM generate_series(1, 4) AS g",
            tenant,
        )
        await conn.execute(
            "INSERT INTO config_history (tenant_id, key, valid_from, valid_to, value, locked,"
            " sensitive, reveal_to_descendants, updated_at)"
            " SELECT $1, 'k' || (g % 4 + 1), g, g + 4, to_jsonb(g), false, false, false, now()"
            " FROM generate_series(1, 2000) AS g",
            tenant,
        )
    await conn.execute(
        "ANALYZE config_history_keys; ANALYZE config_history; ANALYZE tenant_history"
    )
    query = Queries.load()["render_tenant_context_at"]
    params = {"tenant_id": chain[-1], "revision": 1500, "at": None}
    row = await query.one(conn, **params)
    assert row is not None
    assert row["id"] == chain[-1]
    assert sorted(orjson.loads(row["document"])["resolved_config"]) == ["k1", "k2", "k3", "k4"]
    plan = await conn.fetchval(f"EXPLAIN (FORMAT JSON) {query.sql}", *query.args(**params))
    scanned = {
        n.get("Relation Name") for n in nodes(plan[0]["Plan"]) if n["Node Type"] == "Seq Scan"
    }
    assert not scanned & {
        "config_history_keys", "permission_history_keys", "config_history",
        "permission_history", "tenant_history",
    }, scanned  # fmt: skip
