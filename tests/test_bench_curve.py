"""The cost curve (`python -m bench curve`, make bench-huge): its shapes beyond a million
tenants, its judgement of the 10M targets, its table, its command line, and the sizes and
buffer counters it reads from a seeded database."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import msgspec

from bench.__main__ import build_parser
from bench.curve import (
    CURVE_SCALES,
    CurvePoint,
    CurveResult,
    RelationSize,
    curve_checks,
    format_curve,
)
from bench.results import MoveFigures, RunResult, Scale, ScaledRead, ScaleSide, load_run
from bench.seed import seed_database
from bench.shapes import SeedPlan
from bench.sqlfiles import bench_queries

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"


def test_beyond_a_million_the_widest_node_and_largest_move_stay_those_of_the_full_run() -> None:
    assert SeedPlan.for_total(100_000).wide_children == 10_000
    assert SeedPlan.for_total(1_000_000).wide_children == 100_000
    assert SeedPlan.for_total(10_000_000).wide_children == 100_000


def _side(tenants: int, p50: float) -> ScaleSide:
    read = ScaledRead(p50_ms=p50, round_p50s_ms=[p50], p99_ms=p50 * 2)
    return ScaleSide(tenants=tenants, context_depth10=read, ancestors_depth10=read)


def _point(run: RunResult, tenants: int, move_ms: float, scale: Scale | None) -> CurvePoint:
    moves = msgspec.structs.replace(
        run.moves,
        move_1000=MoveFigures(tenants_moved=1_000, count=6, errors=0, max_ms=move_ms * 2,
                              p50_ms=move_ms),
    )  # fmt: skip
    return CurvePoint(
        tenants=tenants, seed_s=41.5, closure_rows=tenants * 6, database_mb=tenants / 1e3,
        relations=[RelationSize(table="tenant_closure", rows=tenants * 6, table_mb=40.0,
                                index_mb=60.0)],
        buffer_hit_ratio=0.9987, shared_buffers_mb=2048, seeder_peak_rss_mb=900.0,
        service_rss_mb=80.0,
        run=msgspec.structs.replace(run, moves=moves, scale=scale),
    )  # fmt: skip


def test_the_10m_targets_are_judged_on_the_side_by_side_ratios() -> None:
    run = load_run(RESULTS / "full-round6.json")
    one_m = _point(run, 1_000_000, 80.0, None)
    scale = Scale(
        read_cache="off", rounds=3, small=_side(1_000_000, 2.0), main=_side(10_000_000, 2.4),
        context_depth10_ratio=1.2, ancestors_depth10_ratio=1.4,
    )  # fmt: skip
    ten_m = _point(run, 10_000_000, 120.0, scale)
    checks = curve_checks([one_m, ten_m])
    assert [(c.name, c.value, c.met) for c in checks] == [
        ("context at depth 10, 10M / 1M (side by side, cache off)", 1.2, True),
        ("ancestors at depth 10, 10M / 1M (side by side, cache off)", 1.4, False),
        ("descendants of 10,000 at 10M, p50 ms", 19.2, True),
        ("move of 1,000 tenants, 10M / 1M (p50)", 1.5, True),
    ]
    # Without 10M nothing is judged.
    assert {c.met for c in curve_checks([one_m])} == {None}

    table = format_curve(CurveResult(started_at="t", points=[one_m, ten_m], checks=checks,
                                     elapsed_s=1.0))  # fmt: skip
    lines = table.splitlines()
    assert lines[0] == "| | 1,000,000 | 10,000,000 |"
    assert "| tenant_closure: table + indexes (MB) | 40 + 60 | 40 + 60 |" in lines
    assert "| reads from shared buffers | 99.87 % | 99.87 % |" in lines
    assert "| move of 1,000, p50 ms (max) | 80 (160) | 120 (240) |" in lines
    assert "| vs the scale before: context d10 / ancestors d10 | - | 1.20 / 1.40 |" in lines
    assert "| context at depth 10, p50 ms (side by side) | - | 2.40 |" in lines
    assert "| context at depth 31, p50 ms (sweep) | 0.50 | 0.50 |" in lines
    assert "| ancestors at depth 10, 10M / 1M (side by side, cache off) | <= 1.3 | 1.4 | NO |" in (
        lines
    )


def test_the_command_line_takes_scales() -> None:
    args = build_parser().parse_args(["curve", "--scales", "100000,10000", "--duration", "2"])
    assert (args.command, args.scales, args.duration) == ("curve", "100000,10000", 2.0)
    defaults = build_parser().parse_args(["curve"])
    assert defaults.scales == ",".join(str(n) for n in CURVE_SCALES)


async def test_sizes_and_buffer_counters_of_a_seeded_database(fresh_db_url: str) -> None:
    await seed_database(fresh_db_url, SeedPlan.for_total(2_000))
    queries = bench_queries()
    conn = await asyncpg.connect(fresh_db_url)
    try:
        await conn.execute("ANALYZE")
        await queries["reset_database_statistics"].exec(conn)
        await conn.fetchval("SELECT count(*) FROM tenant_closure")
        # A backend reports its counters when idle, at most once a second unless told.
        await conn.execute("SELECT pg_stat_force_next_flush()")
        counters = await queries["buffer_counters"].one(conn)
        assert counters is not None
        assert counters["blks_hit"] + counters["blks_read"] > 0
        sizes = {r["table_name"]: r for r in await queries["list_relation_sizes"].many(
            conn, table_limit=50)}  # fmt: skip
        assert sizes["tenants"]["estimated_rows"] >= 2_000
        assert sizes["tenant_closure"]["estimated_rows"] > sizes["tenants"]["estimated_rows"]
        assert sizes["tenant_closure"]["index_bytes"] > 0
        total = await queries["database_bytes"].value(conn)
        assert total > sum(r["table_bytes"] + r["index_bytes"] for r in sizes.values()) / 2
    finally:
        await conn.close()
