"""What value schemas add to a config write, measured in process.

A config PUT at a tenant of depth 10 is timed without any schema on its path and with
schemas declared for its key at three of its ancestors (the root, depth 4, depth 9), the
two kinds of write interleaved round by round so that both meet the same machine. Raw
HTTP requests are fed to the real connection protocol (bench/request_cpu.py): no socket
or load generator, but every write's transaction, round trips and commit are real.

    python -m bench.schema_checks [--database-url URL] [--tenants 10000] [--writes 400]

Prints, per kind, the median over the runs of each run's wall-clock milliseconds and CPU
microseconds per write, with the runs' spread (lowest..highest), and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import asyncpg
import orjson
from aiohttp import web

from bench.environment import PostgresServer
from bench.request_cpu import _request, _Sink
from bench.runner import prepare
from service.app import create_app
from service.http.deadlines import Deadlines, TimedRequestHandler
from service.observability.logs import configure_logging
from service.server import new_event_loop
from service.settings.options import Settings
from service.usecases.common.schema_cache import schema_digest

API = "/api/v1/tenants"
BATCH = 20
SCHEMAS = [
    {"type": "integer", "minimum": 0},
    {"type": "integer", "maximum": 1_000_000_000},
    {"type": "integer", "not": {"const": 5000}},
]


async def declare(dsn: str, deep: str, key: str) -> None:
    """Schemas for key at the root, depth 4 and depth 9 above the deep tenant."""
    conn = await asyncpg.connect(dsn)
    try:
        chain = await conn.fetch(
            "SELECT ancestor_id FROM tenant_closure WHERE descendant_id = $1 ORDER BY depth DESC",
            deep,
        )
        assert len(chain) == 11, len(chain)
        for tenant, schema in zip((chain[0][0], chain[4][0], chain[9][0]), SCHEMAS, strict=True):
            await conn.execute(
                "INSERT INTO config_schemas (tenant_id, key, schema, digest) VALUES"
                " ($1, $2, $3::jsonb, $4)",
                tenant,
                key,
                orjson.dumps(schema).decode(),
                schema_digest(schema),
            )
    finally:
        await conn.close()


async def measure(
    settings: Settings, kinds: dict[str, Callable[[int], bytes]], writes: int, runs: int
) -> dict[str, list[tuple[float, float]]]:
    """Per kind, per run: (wall ms, CPU us) per write."""
    app = create_app(settings)

    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
    try:
        loop = asyncio.get_running_loop()
        assert runner.server is not None
        protocol = TimedRequestHandler(runner.server, loop=loop, deadlines=Deadlines(30.0, 30.0))
        sink = _Sink()
        protocol.connection_made(sink)
        sequence = 0

        async def run(requests: Callable[[int], bytes], n: int) -> None:
            nonlocal sequence
            for _ in range(n):
                sequence += 1
                sink.answered = loop.create_future()
                protocol.data_received(requests(sequence))
                await sink.answered

        for requests in kinds.values():
            await run(requests, 200)  # prepared statements, compiled schemas, caches
        gc.collect()
        for _ in range(runs):
            # Within a run the kinds take turns in batches of BATCH writes, so that a
            # neighbour's burst of load on the shared machine falls on both alike.
            spent = {name: [0.0, 0.0] for name in kinds}
            for _ in range(max(1, writes // BATCH)):
                for name, requests in kinds.items():
                    wall, cpu = time.perf_counter(), time.process_time()
                    await run(requests, BATCH)
                    spent[name][0] += time.perf_counter() - wall
                    spent[name][1] += time.process_time() - cpu
            done = max(1, writes // BATCH) * BATCH
            for name, (wall_s, cpu_s) in spent.items():
                figures[name].append((wall_s / done * 1e3, cpu_s / done * 1e6))
        sink.close()
        protocol.connection_lost(None)
        if sink.refused is not None:
            raise RuntimeError(f"an answer was not 2xx: {sink.refused.decode(errors='replace')}")
    finally:
        await runner.cleanup()
    return figures


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):8.3f} ({min(values):.3f}..{max(values):.3f})"


async def run_all(args: argparse.Namespace, server: PostgresServer) -> None:
    prepared = await prepare(server, "bench_schema_checks", args.tenants, args.data_dir, 4)
    configure_logging("warning")
    settings = Settings.from_env({**prepared.env, "LOG_LEVEL": "warning"})
    deep = prepared.seed.landmarks["context_d10"]
    await declare(prepared.dsn, str(deep), "seats_checked")
    headers = prepared.headers

    def write(key: str) -> Callable[[int], bytes]:
        # Alternating values: every PUT changes the entry (an unchanged one writes nothing).
        return lambda i: _request(
            "PUT", f"{API}/{deep}/config/{key}", headers, b'{"value": %d}' % (i % 1000 + 1)
        )

    kinds = {"no_schema": write("seats_plain"), "three_schemas": write("seats_checked")}
    figures = await measure(settings, kinds, args.writes, args.runs)
    print(f"{'write':16} {'wall ms/write (spread)':>30} {'CPU us/write (spread)':>34}")
    for name, runs in figures.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        print(f"{name:16} {_summary(walls):>30} {_summary(cpus):>34}")
    base = [w for w, _ in figures["no_schema"]]
    checked = [w for w, _ in figures["three_schemas"]]
    ratios = [c / b for b, c in zip(base, checked, strict=True)]
    print(
        f"three_schemas / no_schema, wall: median {statistics.median(ratios):.3f} "
        f"(runs {min(ratios):.3f}..{max(ratios):.3f})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.schema_checks", description=__doc__)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--data-dir", type=Path, default=Path(".data/bench"))
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=400, help="per kind and run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with PostgresServer(args.database_url, args.data_dir) as server:
        loop = new_event_loop()
        try:
            loop.run_until_complete(run_all(args, server))
        finally:
            loop.close()


if __name__ == "__main__":
    main()
