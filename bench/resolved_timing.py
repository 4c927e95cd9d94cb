"""Latency of "who resolves to what" over a subtree of 10,000 tenants.

Seeds a database (the bench's shapes, the sized_10k subtree included), gives the subtree
a key: a value at its root, another at every tenth child, a lock at one child. Then one
service process (tenant-service on 127.0.0.1) answers sequential GET
/tenants/{root}/resolved?key=plan requests: the whole list streamed, filtered by value,
and a first page of 100; and the descendants list of the same subtree, for scale. The
cases take turns request by request. Prints per case the median over the runs of each
run's p50 with their spread, and each run's p90.

    python -m bench.resolved_timing [--database-url URL] [--database-name NAME]
        [--tenants 100000] [--requests 30]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import aiohttp
import asyncpg

from bench.environment import PostgresServer, ServiceProcess
from bench.runner import prepare
from service.server import new_event_loop

API = "/api/v1/tenants"


async def give_key(dsn: str, root: str) -> int:
    """plan: "base" at the subtree's root, "eu" at every tenth child, locked at one."""
    conn = await asyncpg.connect(dsn)
    try:
        children = [
            r[0]
            for r in await conn.fetch(
                "SELECT id FROM tenants WHERE parent_id = $1 ORDER BY id", root
            )
        ]
        await conn.execute(
            "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, 'plan', '\"base\"')",
            root,
        )
        await conn.executemany(
            "INSERT INTO config_entries (tenant_id, key, value, locked) VALUES"
            " ($1, 'plan', '\"eu\"', $2)",
            [(c, i == 0) for i, c in enumerate(children[::10])],
        )
        await conn.execute("ANALYZE config_entries")
        return int(
            await conn.fetchval("SELECT count(*) FROM tenant_closure WHERE ancestor_id = $1", root)
        )
    finally:
        await conn.close()


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_all(args: argparse.Namespace, server: PostgresServer) -> None:
    prepared = await prepare(server, args.database_name, args.tenants, args.data_dir, 10)
    root = str(prepared.seed.landmarks["sized_10k"])
    size = await give_key(prepared.dsn, root)
    port = args.port
    cases = {
        "whole_list": f"{API}/{root}/resolved?key=plan",
        "value_eu": f"{API}/{root}/resolved?key=plan&value=%22eu%22",
        "page_100": f"{API}/{root}/resolved?key=plan&limit=100",
        # The same subtree's descendants list, for scale on the same (busy) machine.
        "descendants": f"{API}/{root}/descendants",
    }
    env = {**prepared.env, "PORT": str(port), "HOST": "127.0.0.1", "LOG_LEVEL": "warning"}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    service = ServiceProcess(env, port)
    await service.start()
    try:
        listed = await _measure(service, prepared.headers, cases, figures, args)
    finally:
        await service.stop()
    _report(figures, listed, size, args.tenants)


async def _measure(
    service: ServiceProcess,
    headers: dict[str, str],
    cases: dict[str, str],
    figures: dict[str, list[tuple[float, float]]],
    args: argparse.Namespace,
) -> dict[str, int]:
    """Fills figures (per case, per run: p50 and p90 ms); returns how many each lists."""
    listed: dict[str, int] = {}
    async with aiohttp.ClientSession() as http:
        base = service.base_url

        async def once(path: str) -> tuple[float, int]:
            started = time.perf_counter()
            async with http.get(base + path, headers=headers) as resp:
                body = await resp.read()
                assert resp.status == 200, body[:200]
            return (time.perf_counter() - started) * 1e3, body.count(
                b'"ancestry_path"'
            ) or body.count(b'"tenant_id"')

        for path in cases.values():
            for _ in range(3):
                await once(path)  # warm: plans, caches
        for _ in range(args.runs):
            times: dict[str, list[float]] = {name: [] for name in cases}
            for _ in range(args.requests):
                for name, path in cases.items():  # the cases take turns request by request
                    ms, count = await once(path)
                    times[name].append(ms)
                    listed[name] = count
            for name, values in times.items():
                figures[name].append((statistics.median(values), _quantile(values, 0.9)))
    return listed


def _report(
    figures: dict[str, list[tuple[float, float]]], listed: dict[str, int], size: int, tenants: int
) -> None:
    print(f"subtree of {size:,} tenants (itself included), {tenants:,} in the database")
    print(
        f"{'case':12} {'listed':>7} {'p50 ms, median of runs (spread)':>34} {'p90 ms per run':>24}"
    )
    for name, runs in figures.items():
        p50s = [p for p, _ in runs]
        spread = f"{statistics.median(p50s):8.1f} ({min(p50s):.1f}..{max(p50s):.1f})"
        p90s = ", ".join(f"{p:.1f}" for _, p in runs)
        print(f"{name:12} {listed[name]:>7} {spread:>34} {p90s:>24}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.resolved_timing", description=__doc__)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--data-dir", type=Path, default=Path(".data/bench"))
    parser.add_argument(
        "--database-name", default="bench_resolved", help="on --database-url: dropped first"
    )
    parser.add_argument("--tenants", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=30, help="per case and run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=18650)
    args = parser.parse_args(argv)
    with PostgresServer(args.database_url, args.data_dir) as server:
        loop = new_event_loop()
        try:
            loop.run_until_complete(run_all(args, server))
        finally:
            loop.close()


if __name__ == "__main__":
    main()
