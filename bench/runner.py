"""`python -m bench run`: seed, baselines, HTTP and SQL measurements, in one run."""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec

from bench.baselines import start_baseline_server
from bench.depths import measure_depths
from bench.environment import PostgresServer, ServiceProcess, free_port, run_cli, service_env
from bench.http_suite import (
    LoadSettings,
    measure_latency,
    measure_moves,
    measure_reads,
    measure_writes,
    read_targets,
)
from bench.loadgen import Target, run_load, wrk_available
from bench.machine import describe_machine
from bench.mixed import measure_mixed
from bench.results import (
    DepthSweep,
    EndpointFigures,
    Mixed,
    Moves,
    Options,
    RunResult,
    Scale,
    ScaledRead,
    ScaleSide,
    Seeds,
    SeriesFigures,
    SqlComparison,
    Writes,
)
from bench.seed import SeedReport, seed_database
from bench.shapes import SeedPlan
from bench.targets import TARGET_RULES, evaluate_targets

SMALL_SCALE = 10_000
# Reads the service answers from its read cache (service/caches/read_cache.py).
CACHED_READS = frozenset(
    {"get_tenant", "context_depth1", "context_depth5", "context_depth10", "context_samples"}
)


@dataclass(frozen=True)
class RunOptions:
    mode: str
    tenants: int
    database_url: str | None
    data_dir: Path
    pool_size: int
    load: LoadSettings
    sql_repeats: int
    skip_sql: bool
    # Steps or read endpoints to run (None: all); for before/after runs of one change.
    only: frozenset[str] | None = None

    def wants(self, step: str) -> bool:
        return self.only is None or step in self.only


@dataclass(frozen=True)
class Prepared:
    dsn: str
    env: dict[str, str]
    headers: dict[str, str]
    seed: SeedReport


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


async def prepare(
    server: PostgresServer, name: str, tenants: int, work_dir: Path, pool_size: int
) -> Prepared:
    dsn = await server.fresh_database(name)
    env = service_env(dsn, work_dir / name, pool_size)
    await run_cli(env, "migrate")
    seed = await seed_database(dsn, SeedPlan.for_total(tenants))
    say(
        f"{name}: {seed.tenants:,} tenants, {seed.closure_rows:,} closure rows "
        f"in {seed.total_s:.1f} s"
    )
    created = json.loads(
        await run_cli(
            env, "api-keys", "create", "--name", "bench", "--scopes", "read,write,admin", "--json"
        )
    )
    return Prepared(dsn, env, {"X-API-Key": created["plaintext_key"]}, seed)


async def measure_baselines(prepared: Prepared, options: RunOptions) -> dict[str, EndpointFigures]:
    load = options.load
    port = free_port()
    results: dict[str, EndpointFigures] = {}
    async with await start_baseline_server(prepared.dsn, port, options.pool_size) as _server:
        base = f"http://127.0.0.1:{port}"
        cases = {
            "B_http": [Target("GET", "/http")],
            "B_db": [Target("GET", f"/db/{tid}") for tid in prepared.seed.samples],
        }
        for name, targets in cases.items():
            await run_load(
                base,
                targets,
                headers={},
                connections=load.connections,
                duration_s=load.warmup_s,
                tool=load.tool,
            )
            measured = await run_load(
                base,
                targets,
                headers={},
                connections=load.connections,
                duration_s=load.duration_s,
                tool=load.tool,
            )
            results[name] = EndpointFigures(load=measured.figures())
            say(f"{name}: {measured.rps:,.0f} req/s, p99 {measured.p99_ms:.2f} ms")
    return results


async def run_suite(options: RunOptions, server: PostgresServer) -> RunResult:
    started = time.perf_counter()
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    run_options = Options(
        tenants=options.tenants,
        connections=options.load.connections,
        duration_s=options.load.duration_s,
        pool_size=options.pool_size,
        load_tool="wrk" if options.load.tool != "python" and wrk_available() else "python",
    )
    sql: SqlComparison | None = None
    with tempfile.TemporaryDirectory(prefix="bench-") as scratch:
        work_dir = Path(scratch)
        machine = describe_machine(await server.server_version(), server.kind)
        small_too = (
            f" and {SMALL_SCALE:,} for the scale comparison" if options.wants("scale") else ""
        )
        say(f"seeding {options.tenants:,} tenants{small_too}")
        main = await prepare(server, "bench_main", options.tenants, work_dir, options.pool_size)
        small = (
            await prepare(server, "bench_small", SMALL_SCALE, work_dir, options.pool_size)
            if options.wants("scale")
            else None
        )
        if not options.skip_sql and options.wants("sql"):
            say("SQL comparison: closure table, recursive CTE, ltree")
            sql = await _sql_comparison(main.dsn, options.sql_repeats)
        measured = await measure_service(main, options)
        scale: Scale | None = None
        if small is not None:
            say(f"scale comparison at {SMALL_SCALE:,} tenants")
            scale = await scale_comparison(main, small, options)
    result = RunResult(
        mode=options.mode,
        started_at=started_at,
        options=run_options,
        machine=machine,
        seed=Seeds(main=main.seed.figures(), small=None if small is None else small.seed.figures()),
        sql=sql,
        baselines=measured.baselines,
        endpoints=measured.endpoints,
        writes=measured.writes,
        moves=measured.moves,
        scale=scale,
        mixed=measured.mixed,
        depths=measured.depths,
        target_rules=TARGET_RULES,
    )
    return msgspec.structs.replace(
        result,
        targets=evaluate_targets(result),
        elapsed_s=round(time.perf_counter() - started, 1),
    )


@dataclass(frozen=True)
class Measured:
    baselines: dict[str, EndpointFigures]
    endpoints: dict[str, EndpointFigures]
    writes: Writes
    moves: Moves
    mixed: Mixed | None
    depths: DepthSweep | None


async def measure_service(main: Prepared, options: RunOptions) -> Measured:
    """On a seeded database: the baselines, the service's reads, writes and moves, the
    mixed workload and the depth sweep (the steps options asks for)."""
    say("baselines")
    baselines = await measure_baselines(main, options)
    endpoints, writes, moves = await _service_runs(main, options)
    mixed: Mixed | None = None
    if options.wants("mixed"):
        say("mixed workload: contexts read while config writes and moves arrive")
        b_db = baselines.get("B_db")
        mixed = await measure_mixed(
            main.env, main.headers, main.seed, options.load,
            None if b_db is None else b_db.load.rps,
        )  # fmt: skip
    depths: DepthSweep | None = None
    if options.wants("depths"):
        say("context and ancestors against depth, read cache off")
        depths = await measure_depths(
            main.env, main.headers, main.seed, max(20, options.load.latency_samples // 4)
        )
    return Measured(baselines, endpoints, writes, moves, mixed, depths)


async def _sql_comparison(dsn: str, repeats: int) -> SqlComparison:
    import asyncpg

    from bench.sqlcompare import compare_strategies

    conn = await asyncpg.connect(dsn)
    try:
        return await compare_strategies(conn, repeats=repeats)
    finally:
        await conn.close()


async def _service_runs(
    prepared: Prepared, options: RunOptions
) -> tuple[dict[str, EndpointFigures], Writes, Moves]:
    service = ServiceProcess(prepared.env, free_port())
    await service.start()
    try:
        say("reads under load")
        reads = await measure_reads(
            service.base_url, prepared.headers, prepared.seed, options.load, options.only
        )
        writes = Writes()
        moves = Moves()
        if options.wants("writes"):
            say("writes")
            writes = await measure_writes(
                service.base_url, prepared.headers, prepared.seed, options.load
            )
        if options.wants("moves"):
            say("moves")
            moves = await measure_moves(
                service.base_url, prepared.headers, prepared.seed, options.load
            )
    finally:
        await service.stop()
    if options.wants("moves"):
        await _vacuum_after_moves(prepared.dsn)
    if options.wants("uncached"):
        say("cached reads again with the read cache off")
        reads |= await _uncached_reads(prepared, options)
    return reads, writes, moves


async def _vacuum_after_moves(dsn: str) -> None:
    import asyncpg

    from bench.sqlfiles import bench_queries

    started = time.perf_counter()
    conn = await asyncpg.connect(dsn)
    try:
        await bench_queries()["vacuum_after_moves"].exec(conn)
    finally:
        await conn.close()
    say(f"vacuumed after the moves in {time.perf_counter() - started:.1f} s")


async def _uncached_reads(prepared: Prepared, options: RunOptions) -> dict[str, EndpointFigures]:
    """The cached endpoints measured on a service whose read cache is off: what a
    request costs when the cache misses (a cold process, a tenant seen for the first
    time, the moment after a change)."""
    service = ServiceProcess(uncached(prepared.env), free_port())
    await service.start()
    try:
        figures = await measure_reads(
            service.base_url, prepared.headers, prepared.seed, options.load, CACHED_READS
        )
    finally:
        await service.stop()
    return {f"{name}_uncached": value for name, value in figures.items()}


def uncached(env: dict[str, str]) -> dict[str, str]:
    return {**env, "READ_CACHE_SIZE": "0"}


SCALE_ROUNDS = 3


async def scale_comparison(main: Prepared, small: Prepared, options: RunOptions) -> Scale:
    """End-to-end latency of context and ancestors at depth 10, the same requests on
    both databases. Both services run side by side and are measured in alternation,
    SCALE_ROUNDS times each, so a slow patch of the shared machine hits both sizes; the
    figure per size is the median of its rounds' p50s."""
    services = {
        label: ServiceProcess(uncached(prepared.env), free_port())
        for label, prepared in (("small", small), ("main", main))
    }
    prepared_by = {"small": small, "main": main}
    rounds: dict[str, dict[str, list[SeriesFigures]]] = {
        label: {"context_depth10": [], "ancestors_depth10": []} for label in services
    }
    try:
        for service in services.values():
            await service.start()
        for _ in range(SCALE_ROUNDS):
            for label, service in services.items():
                prepared = prepared_by[label]
                targets = read_targets(prepared.seed)
                for name, series in rounds[label].items():
                    series.append(
                        await measure_latency(
                            service.base_url,
                            prepared.headers,
                            targets[name],
                            options.load.latency_samples,
                        )
                    )
    finally:
        for service in services.values():
            await service.stop()
    sides = {
        label: ScaleSide(
            tenants=prepared_by[label].seed.tenants,
            context_depth10=_scaled(by_name["context_depth10"]),
            ancestors_depth10=_scaled(by_name["ancestors_depth10"]),
        )
        for label, by_name in rounds.items()
    }
    small_side, main_side = sides["small"], sides["main"]
    return Scale(
        read_cache="off (the database path is what scales)",
        rounds=SCALE_ROUNDS,
        small=small_side,
        main=main_side,
        context_depth10_ratio=round(
            main_side.context_depth10.p50_ms / small_side.context_depth10.p50_ms, 2
        ),
        ancestors_depth10_ratio=round(
            main_side.ancestors_depth10.p50_ms / small_side.ancestors_depth10.p50_ms, 2
        ),
    )


def _scaled(series: list[SeriesFigures]) -> ScaledRead:
    p50s = sorted(s.p50_ms for s in series)
    return ScaledRead(
        p50_ms=p50s[len(p50s) // 2],
        round_p50s_ms=[s.p50_ms for s in series],
        p99_ms=max(s.p99_ms for s in series),
    )
