"""EXPLAIN ANALYZE over a long history: naming a moment by time reads one entry of
history_revisions however far back the moment lies (30 days at 100 writes a minute is
4.3 million revisions; a filtered max(revision) walked back over all those since)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from service.db.pool import connect
from service.db.queries import Queries
from tests.support.databases import create_database, drop_database

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


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += nodes(child)
    return found


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
