"""Sequential latency of whole descendants lists, for before/after runs of a change: one
service process per source tree (a checkout of the code before, the worktree after), on
the same seeded database, the trees taking turns request by request so that the noise
of a busy machine falls on every tree alike (and ratios pair requests sent together).

    python -m bench.descendants_timing --dsn DSN --tree before=/tmp/old --tree after=.

A change that adds a migration cannot share a database with the code before it (which
refuses a database with migrations it does not know): give that tree a copy of the
database made before the migration, `--tree-dsn before=DSN` (CREATE DATABASE ...
TEMPLATE, so both hold the same tenants and ids).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
import asyncpg

from bench.environment import ServiceProcess, free_port, run_cli, service_env
from bench.loadgen import Target, time_requests


async def sized_root(dsn: str, size: int) -> str:
    """A tenant with exactly `size` descendants (bench/shapes.py seeds 100 and 10,000)."""
    conn = await asyncpg.connect(dsn)
    try:
        found = await conn.fetchval(
            "SELECT ancestor_id FROM tenant_closure WHERE depth > 0 GROUP BY ancestor_id "
            "HAVING count(*) = $1 ORDER BY ancestor_id LIMIT 1",
            size,
        )
    finally:
        await conn.close()
    if found is None:
        raise SystemExit(f"no tenant with exactly {size} descendants: seed with bench/seed.py")
    return str(found)


async def alternate(
    services: dict[str, ServiceProcess], path: str, keys: dict[str, str], count: int
) -> dict[str, list[float]]:
    """`count` requests to each service, one at a time, taking turns request by
    request: each list of latencies (ms, with the body read and gunzipped as the bench's
    client does) pairs with the others by index."""
    samples: dict[str, list[float]] = {name: [] for name in services}
    async with aiohttp.ClientSession() as session:
        for _ in range(count):
            for name, service in services.items():
                started = time.perf_counter()
                headers = {"X-API-Key": keys[name]}
                async with session.get(service.base_url + path, headers=headers) as answer:
                    await answer.read()
                    if answer.status != 200:
                        raise SystemExit(f"{name}: {answer.status}")
                samples[name].append((time.perf_counter() - started) * 1000)
    return samples


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="heavy_timing_"))
    trees = dict(t.split("=", 1) for t in args.tree)
    dsns = {name: args.dsn for name in trees} | dict(d.split("=", 1) for d in args.tree_dsn)
    root = await sized_root(args.dsn, args.size)
    services: dict[str, ServiceProcess] = {}
    keys: dict[str, str] = {}  # per tree, one per database
    try:
        for name, source in trees.items():
            env = {**service_env(dsns[name], data_dir, 4), "PYTHONPATH": source}
            os.chdir(source)  # `python -m service` imports from the working directory
            known = [keys[other] for other in keys if dsns[other] == dsns[name]]
            if not known:
                created = await run_cli(env, "api-keys", "create", "--name", "timing",
                                        "--scopes", "read", "--json")  # fmt: skip
                known = [json.loads(created)["plaintext_key"]]
            keys[name] = known[0]
            services[name] = ServiceProcess(env, free_port())
            await services[name].start()
        path = f"/api/v1/tenants/{root}/descendants"
        for name, service in services.items():  # warm: statements, pools, buffers
            headers = {"X-API-Key": keys[name]}
            await time_requests(service.base_url, [Target("GET", path)], headers=headers, repeat=20)
        samples = await alternate(services, path, keys, args.rounds * args.requests)
        first = next(iter(samples))
        for name, ms in samples.items():
            ratios = [a / b for a, b in zip(ms, samples[first], strict=True)]
            print(f"{name:>10}: p50 {statistics.median(ms):6.1f} ms, p90 "
                  f"{statistics.quantiles(ms, n=10)[-1]:6.1f} ms, median ratio to {first} "
                  f"{statistics.median(ratios):.2f} ({len(ms)} requests)")  # fmt: skip
    finally:
        for service in services.values():
            await service.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--tree", action="append", required=True, help="NAME=SOURCE_DIR")
    parser.add_argument("--tree-dsn", action="append", default=[], metavar="NAME=DSN",
                        help="this tree's own copy of the database (default: --dsn)")  # fmt: skip
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="per round and tree")
    parsed = parser.parse_args()
    parsed.tree = [f"{n}={os.path.abspath(t)}" for n, t in (t.split("=", 1) for t in parsed.tree)]
    asyncio.run(main(parsed))
