"""`python -m bench curve` (make bench-huge): the cost curve to 10 million tenants.

Each scale (10,000, 100,000, 1,000,000 and 10,000,000 tenants by default) is seeded with
COPY in the full run's shapes (bench/shapes.py; beyond a million tenants the widest node
keeps its 100,000 children, so the largest move stays 100,001 tenants), then measured as
the full run measures it: context and ancestors at depths 1 to 31, descendants of 10,000,
children of the widest node, moves of 1 to 100,001 tenants, creates, and the mixed
workload. Each scale is also set against the one before it, side by side and in
alternation (context and ancestors at depth 10, read cache off), so the ratio between two
scales is not a difference between two moments of a shared machine. For each scale it
records the seed time, the database's size by table and index, the share of reads served
from shared buffers, and the memory of the seeding process and of a service process.

Not part of `make test` or `.ci/run`: at ten million tenants it needs about 20 GB of disk
and takes an hour or more on two cores.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import msgspec
import psutil

from bench.environment import PostgresServer, ServiceProcess, free_port
from bench.http_suite import LoadSettings, read_targets
from bench.loadgen import time_requests, wrk_available
from bench.machine import describe_machine
from bench.results import Figures, Options, RunResult, Seeds, encode
from bench.runner import (
    Prepared,
    RunOptions,
    measure_service,
    prepare,
    say,
    scale_comparison,
    uncached,
)
from bench.sqlfiles import bench_queries
from bench.targets import TARGET_RULES, evaluate_targets

CURVE_SCALES = (10_000, 100_000, 1_000_000, 10_000_000)
CURVE_STEPS = frozenset({"reads", "writes", "moves", "mixed", "depths"})
TABLES_SHOWN = 8
MB = 1e6


class RelationSize(Figures, frozen=True):
    table: str
    rows: int
    table_mb: float
    index_mb: float


class CurvePoint(Figures, frozen=True):
    tenants: int
    seed_s: float
    closure_rows: int
    database_mb: float
    relations: list[RelationSize]
    # Blocks read during the measurements that shared buffers held (None: none read).
    buffer_hit_ratio: float | None
    shared_buffers_mb: int
    seeder_peak_rss_mb: float
    # A service process after reading 1,000 tenants and contexts.
    service_rss_mb: float
    run: RunResult


class CurveCheck(Figures, frozen=True):
    name: str
    goal: str
    value: float | None
    met: bool | None


class CurveResult(Figures, frozen=True):
    started_at: str
    points: list[CurvePoint]
    checks: list[CurveCheck]
    elapsed_s: float


@dataclass(frozen=True)
class CurveOptions:
    scales: tuple[int, ...]
    database_url: str | None
    data_dir: Path
    pool_size: int
    load: LoadSettings
    results_dir: Path
    keep_databases: bool = False


async def run_curve(options: CurveOptions, server: PostgresServer) -> CurveResult:
    started = time.perf_counter()
    started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    machine = describe_machine(await server.server_version(), server.kind)
    points: list[CurvePoint] = []
    previous: Prepared | None = None
    stamp = time.strftime("%Y%m%dT%H%M%S")
    with tempfile.TemporaryDirectory(prefix="bench-curve-") as scratch:
        for tenants in options.scales:
            say(f"curve: seeding {tenants:,} tenants")
            main = await prepare(
                server, f"bench_curve_{tenants}", tenants, Path(scratch), options.pool_size
            )
            run_options = RunOptions(
                mode="curve", tenants=tenants, database_url=options.database_url,
                data_dir=options.data_dir, pool_size=options.pool_size, load=options.load,
                sql_repeats=0, skip_sql=True, only=CURVE_STEPS,
            )  # fmt: skip
            await _reset_counters(main.dsn)
            measured = await measure_service(main, run_options)
            scale = None
            if previous is not None:
                say(f"curve: {tenants:,} against {previous.seed.tenants:,}, side by side")
                scale = await scale_comparison(main, previous, run_options)
                if not options.keep_databases:
                    await _drop(server, f"bench_curve_{previous.seed.tenants}")
            run = RunResult(
                mode="curve",
                started_at=started_at,
                options=_run_options(run_options),
                machine=machine,
                seed=Seeds(main=main.seed.figures()),
                baselines=measured.baselines,
                endpoints=measured.endpoints,
                writes=measured.writes,
                moves=measured.moves,
                scale=scale,
                mixed=measured.mixed,
                depths=measured.depths,
                target_rules=TARGET_RULES,
            )
            run = msgspec.structs.replace(run, targets=evaluate_targets(run))
            point = await _point(main, run)
            points.append(point)
            path = options.results_dir / f"curve-{tenants}-{stamp}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(encode(run))
            say(f"curve: {tenants:,} done: {point.database_mb:,.0f} MB, results in {path}")
            previous = main
    return CurveResult(
        started_at=started_at,
        points=points,
        checks=curve_checks(points),
        elapsed_s=round(time.perf_counter() - started, 1),
    )


def _run_options(options: RunOptions) -> Options:
    return Options(
        tenants=options.tenants,
        connections=options.load.connections,
        duration_s=options.load.duration_s,
        pool_size=options.pool_size,
        load_tool="wrk" if options.load.tool != "python" and wrk_available() else "python",
    )


async def _reset_counters(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await bench_queries()["reset_database_statistics"].exec(conn)
    finally:
        await conn.close()


async def _drop(server: PostgresServer, name: str) -> None:
    conn = await asyncpg.connect(server.admin_dsn)
    try:
        ddl = await bench_queries()["database_ddl"].one(conn, database_name=name)
        assert ddl is not None
        await conn.execute(ddl["drop_ddl"])
    finally:
        await conn.close()


async def _point(main: Prepared, run: RunResult) -> CurvePoint:
    queries = bench_queries()
    conn = await asyncpg.connect(main.dsn)
    try:
        counters = await queries["buffer_counters"].one(conn)
        assert counters is not None
        relations = [
            RelationSize(
                table=row["table_name"],
                rows=row["estimated_rows"],
                table_mb=round(row["table_bytes"] / MB, 1),
                index_mb=round(row["index_bytes"] / MB, 1),
            )
            for row in await queries["list_relation_sizes"].many(conn, table_limit=TABLES_SHOWN)
        ]
        database = int(await queries["database_bytes"].value(conn))
        shared_buffers = int(await queries["shared_buffers_mb"].value(conn))
    finally:
        await conn.close()
    hit, read = int(counters["blks_hit"]), int(counters["blks_read"])
    return CurvePoint(
        tenants=main.seed.tenants,
        seed_s=round(main.seed.total_s, 1),
        closure_rows=main.seed.closure_rows,
        database_mb=round(database / MB, 1),
        relations=relations,
        buffer_hit_ratio=round(hit / (hit + read), 4) if hit + read else None,
        shared_buffers_mb=shared_buffers,
        # Linux reports ru_maxrss in KiB; the scales grow, so the peak is this scale's.
        seeder_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        service_rss_mb=await _service_rss_mb(main),
        run=run,
    )


async def _service_rss_mb(main: Prepared) -> float:
    """A service process's memory (read cache off) after 1,000 reads of tenants and
    contexts: what the service holds does not grow with the tenant count."""
    service = ServiceProcess(uncached(main.env), free_port())
    await service.start()
    try:
        targets = read_targets(main.seed)
        reads = [*targets["get_tenant"], *targets.get("context_depth10", [])]
        await time_requests(service.base_url, reads, headers=main.headers, repeat=1_000)
        assert service.pid is not None
        rss: int = psutil.Process(service.pid).memory_info().rss
        return round(rss / 2**20, 1)
    finally:
        await service.stop()


def curve_checks(points: list[CurvePoint]) -> list[CurveCheck]:
    """The 10M targets, judged when the curve reaches 10M with 1M measured before it."""
    by_size = {p.tenants: p for p in points}
    top, one_m = by_size.get(10_000_000), by_size.get(1_000_000)
    scale = None if top is None else top.run.scale
    aligned = scale is not None and scale.small.tenants == 1_000_000
    descendants = None if top is None else top.run.endpoints.get("descendants_10000")
    seq = None if descendants is None else descendants.sequential
    move_top = None if top is None else top.run.moves.move_1000
    move_one = None if one_m is None else one_m.run.moves.move_1000
    move_ratio = (
        move_top.p50_ms / move_one.p50_ms
        if move_top and move_one and move_top.p50_ms and move_one.p50_ms
        else None
    )
    return [
        _check("context at depth 10, 10M / 1M (side by side, cache off)", "<= 1.3",
               scale.context_depth10_ratio if scale and aligned else None, 1.3),
        _check("ancestors at depth 10, 10M / 1M (side by side, cache off)", "<= 1.3",
               scale.ancestors_depth10_ratio if scale and aligned else None, 1.3),
        _check("descendants of 10,000 at 10M, p50 ms", "< 80",
               None if seq is None else seq.p50_ms, 80, strict=True),
        _check("move of 1,000 tenants, 10M / 1M (p50)", "< 2", move_ratio, 2, strict=True),
    ]  # fmt: skip


def _check(
    name: str, goal: str, value: float | None, bound: float, *, strict: bool = False
) -> CurveCheck:
    met = None if value is None else (value < bound if strict else value <= bound)
    return CurveCheck(name=name, goal=goal, value=None if value is None else round(value, 2),
                      met=met)  # fmt: skip


def format_curve(result: CurveResult) -> str:
    """The curve as markdown: one column per scale, then the checks."""
    points = result.points
    header = "| | " + " | ".join(f"{p.tenants:,}" for p in points) + " |"
    lines = [header, "|---" * (len(points) + 1) + "|"]

    def row(label: str, values: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    row("seed (s)", [f"{p.seed_s:.1f}" for p in points])
    row("closure rows", [f"{p.closure_rows:,}" for p in points])
    row("database (MB)", [f"{p.database_mb:,.0f}" for p in points])
    for table in ("tenants", "tenant_closure", "config_entries", "permission_policies"):
        row(f"{table}: table + indexes (MB)", [_size(p, table) for p in points])
    row("reads from shared buffers", [_ratio(p.buffer_hit_ratio) for p in points])
    row("seeding process, peak RSS (MB)", [f"{p.seeder_peak_rss_mb:,.0f}" for p in points])
    row("service process RSS (MB)", [f"{p.service_rss_mb:,.0f}" for p in points])
    swept = sorted({d.depth for p in points if p.run.depths for d in p.run.depths.points})
    for what in ("context", "ancestors"):
        for depth in [d for d in swept if d in (1, 8, 16, 31)] or swept:
            row(
                f"{what} at depth {depth}, p50 ms (sweep)", [_depth(p, depth, what) for p in points]
            )
        row(f"{what} at depth 10, p50 ms (side by side)", [_side(p, what) for p in points])
    for name in ("descendants_10000", "children_page", "get_tenant"):
        row(f"{name} p50 ms (sequential)", [_sequential(p, name) for p in points])
    for label, move in (("move_1", 1), ("move_1000", 1_000), ("move_10000", 10_001),
                        ("move_100000", 100_001)):  # fmt: skip
        row(f"move of {move:,}, p50 ms (max)", [_move(p, label) for p in points])
    row("create, p50 ms", [_create(p) for p in points])
    row("context x no-write rate at 50 writes/s", [_mixed(p) for p in points])
    row("vs the scale before: context d10 / ancestors d10", [_scaled(p) for p in points])
    lines += ["", "| check | goal | value | met |", "|---|---|---|---|"]
    for check in result.checks:
        value = "-" if check.value is None else f"{check.value:g}"
        met = "not measured" if check.met is None else ("yes" if check.met else "NO")
        lines.append(f"| {check.name} | {check.goal} | {value} | {met} |")
    return "\n".join(lines)


def _size(point: CurvePoint, table: str) -> str:
    for relation in point.relations:
        if relation.table == table:
            return f"{relation.table_mb:,.0f} + {relation.index_mb:,.0f}"
    return "-"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f} %"


def _depth(point: CurvePoint, depth: int, what: str) -> str:
    sweep = point.run.depths
    for p in [] if sweep is None else sweep.points:
        if p.depth == depth:
            return f"{(p.context if what == 'context' else p.ancestors).p50_ms:.2f}"
    return "-"


def _side(point: CurvePoint, what: str) -> str:
    """This scale's depth-10 p50 from its side-by-side run with the scale before."""
    scale = point.run.scale
    if scale is None:
        return "-"
    read = scale.main.context_depth10 if what == "context" else scale.main.ancestors_depth10
    return f"{read.p50_ms:.2f}"


def _sequential(point: CurvePoint, name: str) -> str:
    figures = point.run.endpoints.get(name)
    seq = None if figures is None else figures.sequential
    return "-" if seq is None else f"{seq.p50_ms:.2f}"


def _move(point: CurvePoint, label: str) -> str:
    figures = point.run.moves.sizes().get(label)
    if figures is None:
        return "-"
    each = figures.each_ms or [figures.max_ms]
    p50 = figures.p50_ms if figures.p50_ms is not None else statistics.median(each)
    return f"{p50:,.0f} ({figures.max_ms:,.0f})"


def _create(point: CurvePoint) -> str:
    create = point.run.writes.create
    return "-" if create is None else f"{create.p50_ms:.2f}"


def _mixed(point: CurvePoint) -> str:
    mixed = point.run.mixed
    phase = None if mixed is None else mixed.phase(50.0)
    return "-" if phase is None or phase.x_no_writes is None else f"{phase.x_no_writes:.3f}"


def _scaled(point: CurvePoint) -> str:
    scale = point.run.scale
    if scale is None:
        return "-"
    return f"{scale.context_depth10_ratio:.2f} / {scale.ancestors_depth10_ratio:.2f}"
