"""As-of context reads through HTTP against an uncached GET /context, on a database that
bench.history_cost filled (with HISTORY_DAYS, days of history):

    HISTORY_DAYS=30 DATABASE_URL=postgresql://.../db .venv/bin/python -m bench.history_cost
    DATABASE_URL=postgresql://.../db .venv/bin/python -m bench.history_http

One `tenant-service serve` (read cache off, logs at warning) answers, one request at a
time, GET /context of the chain's leaf at depth 10, and the same with ?revision= at the
newest revision, one day back, half the history back and its start, and with ?as_of= at
those revisions' commit times. The requests of each round alternate in blocks so a slow
patch of a shared machine hits every kind; each figure is the median of ROUNDS round
p50s with the rounds. Target (docs/history.md): an as-of read at most 3 x the uncached
read."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
from datetime import UTC
from pathlib import Path

import asyncpg

from bench.environment import ServiceProcess, free_port, run_cli, service_env
from bench.loadgen import Target, time_requests
from bench.sqlfiles import bench_queries

ROUNDS = 5
BLOCK = 200
TARGET = 3.0
API = "/api/v1/tenants"


async def _moments(dsn: str) -> tuple[str, list[tuple[str, int, str]]]:
    """The chain's leaf, and (label, revision, its commit time) for each moment."""
    queries = bench_queries()
    conn = await asyncpg.connect(dsn)
    try:
        leaf = await queries["first_tenant_at_depth"].value(conn, depth=9)
        # The history's start for this bench: the first revision after the tree was built.
        span = await queries["loaded_history_span"].one(conn)
        assert span is not None
        first, newest = int(span["first_revision"]), int(span["newest_revision"])
        day = await queries["revision_a_day_before_newest"].value(conn)
        picks = [("newest", newest), ("1 day back", day), ("half back", (first + newest) // 2),
                 ("start", first)]  # fmt: skip
        moments = []
        for label, revision in picks:
            if revision is None:
                continue
            at = await queries["revision_committed_at"].value(conn, revision=revision)
            instant = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            moments.append((label, int(revision), instant))
        return str(leaf), moments
    finally:
        await conn.close()


async def main() -> None:
    dsn = os.environ["DATABASE_URL"]
    leaf, moments = await _moments(dsn)
    with tempfile.TemporaryDirectory(prefix="bench-history-") as scratch:
        env = {**service_env(dsn, Path(scratch), 10), "READ_CACHE_SIZE": "0"}
        created = json.loads(
            await run_cli(env, "api-keys", "create", "--name", "bench", "--scopes", "read",
                          "--json")
        )  # fmt: skip
        headers = {"X-API-Key": created["plaintext_key"]}
        kinds = {"live": Target("GET", f"{API}/{leaf}/context")}
        for label, revision, instant in moments:
            kinds[f"revision, {label}"] = Target("GET", f"{API}/{leaf}/context?revision={revision}")
            kinds[f"as_of, {label}"] = Target("GET", f"{API}/{leaf}/context?as_of={instant}")
        service = ServiceProcess(env, free_port())
        await service.start()
        p50s: dict[str, list[float]] = {kind: [] for kind in kinds}
        try:
            for target in kinds.values():  # warm up
                await time_requests(service.base_url, [target], headers=headers, repeat=20)
            for _ in range(ROUNDS):
                for kind, target in kinds.items():
                    series = await time_requests(
                        service.base_url, [target], headers=headers, repeat=BLOCK
                    )
                    assert series.errors == 0, series.first_error
                    p50s[kind].append(series.p50_ms)
        finally:
            await service.stop()
    live = statistics.median(p50s["live"])
    for kind, runs in p50s.items():
        median = statistics.median(runs)
        shown = ", ".join(f"{r:.3f}" for r in runs)
        verdict = "" if kind == "live" else f"  {median / live:.2f} x live"
        print(f"{kind:24} p50 {median:.3f} ms (rounds {shown}){verdict}")
    worst = max(statistics.median(r) for k, r in p50s.items() if k != "live") / live
    print(f"worst as-of / live = {worst:.2f} (target <= {TARGET:g}: "
          f"{'met' if worst <= TARGET else 'NOT met'})")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
