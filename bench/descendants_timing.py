"""Sequential latency of whole descendants lists, for before/after runs of a change: one
service process per source tree (a checkout of the code before, the worktree after), on
the same seeded database, measured in interleaved rounds so that the machine's noise
falls on every tree alike.

    python -m bench.descendants_timing --dsn DSN --tree before=/tmp/old --tree after=.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
from pathlib import Path

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


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="heavy_timing_"))
    trees = dict(t.split("=", 1) for t in args.tree)
    root = await sized_root(args.dsn, args.size)
    services: dict[str, ServiceProcess] = {}
    try:
        key = None
        for name, source in trees.items():
            env = {**service_env(args.dsn, data_dir, 4), "PYTHONPATH": source}
            if key is None:
                created = await run_cli(env, "api-keys", "create", "--name", "timing",
                                        "--scopes", "read", "--json")  # fmt: skip
                key = json.loads(created)["plaintext_key"]
            services[name] = ServiceProcess(env, free_port())
            os.chdir(source)  # `python -m service` imports from the working directory
            await services[name].start()
        headers = {"X-API-Key": str(key)}
        target = [Target("GET", f"/api/v1/tenants/{root}/descendants")]
        samples: dict[str, list[float]] = {name: [] for name in services}
        for service in services.values():  # warm: statements, pools, buffers
            await time_requests(service.base_url, target, headers=headers, repeat=20)
        for _ in range(args.rounds):
            for name, service in services.items():
                series = await time_requests(
                    service.base_url, target, headers=headers, repeat=args.requests
                )
                samples[name].append(series.p50_ms)
        for name, p50s in samples.items():
            print(f"{name:>10}: p50 {statistics.median(p50s):6.1f} ms (median of "
                  f"{len(p50s)} rounds of {args.requests}; rounds {min(p50s):.1f} to "
                  f"{max(p50s):.1f} ms)")  # fmt: skip
    finally:
        for service in services.values():
            await service.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--tree", action="append", required=True, help="NAME=SOURCE_DIR")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20)
    parsed = parser.parse_args()
    parsed.tree = [f"{n}={os.path.abspath(t)}" for n, t in (t.split("=", 1) for t in parsed.tree)]
    asyncio.run(main(parsed))
