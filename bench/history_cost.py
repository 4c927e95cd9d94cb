"""What the history of the resolved view costs (docs/decisions/history.md, "Figures"):
a config write with and without the history trigger, and an as-of context read at
depth 10 against the uncached GET /context statement, on a database with history.

    DATABASE_URL=postgresql://... .venv/bin/python -m bench.history_cost
    HISTORY_DAYS=30 DATABASE_URL=postgresql://... .venv/bin/python -m bench.history_cost

The database must be migrated and empty (a scratch one: the script writes tenants).
Each figure is the median of 3 runs (each the mean of many statements) with the runs.

With HISTORY_DAYS, that many days of WRITES_PER_MINUTE single-entry config writes (a
quarter on the chain) are loaded straight into the history tables before the measured
writes, as the commit trigger would have written them: one revision each, committed
0.6 s apart and ending now, every version closed by the end (the tenants' entries then
start from the measured writes). The as-of reads are then measured across those days,
by revision and by time."""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

import asyncpg

from bench.sqlfiles import bench_queries
from service.db.pool import connect
from service.db.queries import Queries

TENANTS = 1_000
WRITES = 20_000
DEPTH = 10
DAYS = int(os.environ.get("HISTORY_DAYS", "0"))
WRITES_PER_MINUTE = 100


async def _tree(conn: asyncpg.Connection) -> list[uuid.UUID]:
    """A chain of DEPTH tenants, and the rest spread below its members."""
    ids: list[uuid.UUID] = []
    for i in range(TENANTS):
        parent = ids[i - 1] if 0 < i < DEPTH else (random.choice(ids[:DEPTH]) if i else None)
        tid = uuid.uuid4()
        row = (
            await conn.fetchrow("SELECT ancestry_path, depth FROM tenants WHERE id = $1", parent)
            if parent
            else None
        )
        path = f"{row['ancestry_path']}/{tid}" if row else f"/{tid}"
        depth = row["depth"] + 1 if row else 0
        await conn.execute(
            "INSERT INTO tenants (id, parent_id, name, slug, ancestry_path, depth,"
            " isolation_strategy, region, document_head, document_tail)"
            " VALUES ($1, $2, 'T', $3, $4, $5, 'SHARED_RLS', 'default', '', '')",
            tid, parent, f"t{i}_{tid.hex[:8]}", path, depth,
        )  # fmt: skip
        ids.append(tid)
    return ids


async def _write(conn: asyncpg.Connection, tenant: uuid.UUID, key: str, value: int) -> None:
    async with conn.transaction():
        await conn.execute(
            "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, $2, $3::jsonb)"
            " ON CONFLICT (tenant_id, key) DO UPDATE SET value = EXCLUDED.value,"
            " updated_at = now()",
            tenant, key, str(value),
        )  # fmt: skip


async def _long_history(conn: asyncpg.Connection, ids: list[uuid.UUID]) -> tuple[int, int]:
    """DAYS of history loaded in bulk after the tree's revisions; (first, last) revision."""
    queries = bench_queries()
    count = DAYS * 24 * 60 * WRITES_PER_MINUTE
    step = 60 / WRITES_PER_MINUTE
    base = int(await queries["revision_sequence_position"].value(conn))
    # The tree's revisions, and the horizon, come before the loaded days.
    await queries["backdate_history_revisions"].exec(conn, seconds=count * step + 1)
    await queries["backdate_history_horizon"].exec(conn, seconds=count * step + 1)
    await queries["load_history_revisions"].exec(
        conn, after_revision=base, revision_count=count, step_seconds=step
    )
    await queries["move_revision_sequence"].exec(conn, last_revision=base + count)
    await queries["load_config_history"].exec(
        conn, tenant_ids=ids, after_revision=base, revision_count=count
    )
    await queries["load_config_history_keys"].exec(conn)
    await conn.execute("ANALYZE history_revisions")
    await conn.execute("ANALYZE config_history")
    return base + 1, base + count


async def _mean_ms(n: int, fn: Callable[[int], Awaitable[object]]) -> float:
    start = time.perf_counter()
    for i in range(n):
        await fn(i)
    return (time.perf_counter() - start) * 1000 / n


def _figure(runs: list[float]) -> str:
    return f"{statistics.median(runs):.3f} ms (runs {', '.join(f'{r:.3f}' for r in runs)})"


async def main() -> None:
    conn = await connect(os.environ["DATABASE_URL"])
    queries = Queries.load()
    ids = await _tree(conn)
    leaf = ids[DEPTH - 1]
    loaded = await _long_history(conn, ids) if DAYS else None
    if loaded:
        print(f"{DAYS} days loaded: revisions {loaded[0]} to {loaded[1]}")
    rng = random.Random(7)
    # History: WRITES single-entry transactions, a quarter of them on the chain.
    for i in range(WRITES):
        tenant = rng.choice(ids[:DEPTH]) if i % 4 == 0 else rng.choice(ids)
        await _write(conn, tenant, f"k{rng.randrange(8)}", i)
    newest = int(await conn.fetchval("SELECT max(revision) FROM context_revisions"))
    print(f"{TENANTS} tenants, {WRITES} writes, {newest} revisions;", end=" ")
    print(await conn.fetchval("SELECT count(*) FROM config_history"), "config versions")

    toggle = "ALTER TABLE context_revisions {} TRIGGER context_revisions_record_history"
    on: list[float] = []
    off: list[float] = []
    for _ in range(3):
        for runs, verb in ((on, "ENABLE"), (off, "DISABLE")):
            await conn.execute(toggle.format(verb))
            runs.append(await _mean_ms(300, lambda i: _write(conn, leaf, "bench", i)))
    await conn.execute(toggle.format("ENABLE"))
    print("config write, history on: ", _figure(on))
    print("config write, history off:", _figure(off))
    print(f"  history adds {100 * (statistics.median(on) / statistics.median(off) - 1):.0f} %")

    live = queries["render_tenant_context"]
    past = queries["render_tenant_context_at"]
    moments = [("newest", newest), ("middle", newest // 2), ("first of the writes", TENANTS + 1)]
    if loaded:
        per_day = 24 * 60 * WRITES_PER_MINUTE
        moments = [
            ("newest", newest),
            ("1 day back", loaded[1] - per_day),
            (f"{DAYS // 2} days back", loaded[1] - DAYS // 2 * per_day),
            (f"{DAYS} days back", loaded[0]),
        ]
    for label, revision in moments:
        now_runs: list[float] = []
        then_runs: list[float] = []

        async def read_live(_i: int) -> object:
            return await live.one(conn, tenant_id=leaf)

        async def read_past(_i: int, r: int = revision) -> object:
            return await past.one(conn, tenant_id=leaf, revision=r, at=None)

        at = await bench_queries()["revision_committed_at"].value(conn, revision=revision)

        async def read_at_time(_i: int, at: object = at) -> object:
            # The statement resolves the time itself, as the service reads it.
            return await past.one(conn, tenant_id=leaf, revision=None, at=at)

        timed_runs: list[float] = []
        for _ in range(3):
            now_runs.append(await _mean_ms(300, read_live))
            then_runs.append(await _mean_ms(300, read_past))
            timed_runs.append(await _mean_ms(300, read_at_time))
        ratio = statistics.median(then_runs) / statistics.median(now_runs)
        print(f"depth {DEPTH} context, live:              ", _figure(now_runs))
        print(f"depth {DEPTH} context, as of {label} ({revision}):", _figure(then_runs))
        print("  the same by time:", _figure(timed_runs))
        print(f"  as-of / live = {ratio:.2f}")
    await conn.close()


if __name__ == "__main__":
    asyncio.run(main())
