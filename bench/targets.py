"""The issue's targets, judged from one run's results."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from bench.http_suite import BATCH_TENANTS
from bench.results import EndpointFigures, Mixed, MoveFigures, RunResult, TargetResult

MILLION = 1_000_000


def _rps(figures: EndpointFigures | None) -> float | None:
    return None if figures is None else figures.load.rps


def _target(
    name: str,
    goal: str,
    value: float | None,
    ok: Callable[[float], bool],
    unit: str,
    note: str = "",
) -> TargetResult:
    return TargetResult(
        target=name,
        goal=goal,
        value=None if value is None else round(value, 3),
        unit=unit,
        met=None if value is None else ok(value),
        note=note if value is not None else note or "not measured in this run",
    )


# The read endpoints the targets judge (names of bench/http_suite.py read_targets).
JUDGED_READS = ("get_tenant", "context_depth10", "descendants_10000")


def evaluate_targets(result: RunResult) -> list[TargetResult]:
    b_db = _rps(result.baselines.get("B_db"))
    get_rps = _rps(result.endpoints.get("get_tenant"))
    ctx_figures = result.endpoints.get("context_depth10")
    ctx = None if ctx_figures is None else ctx_figures.load
    descendants = result.endpoints.get("descendants_10000")
    descendants_seq = None if descendants is None else descendants.sequential
    scale, sql, moves = result.scale, result.sql, result.moves
    descendants_sql = None if sql is None else sql.operations.get("descendants_10000")
    interference = moves.interference
    tenants = result.seed.main.tenants
    at_scale = "" if tenants >= MILLION else f"main database holds {tenants:,} tenants, not 1M"
    targets = [
        _target(
            "GET tenant (API key) vs B_db",
            ">= 0.7 x B_db RPS",
            get_rps / b_db if get_rps and b_db else None,
            lambda v: v >= 0.7,
            "x B_db",
        ),
        _target(
            "GET context depth 10 vs B_db",
            ">= 0.5 x B_db RPS",
            ctx.rps / b_db if ctx and b_db else None,
            lambda v: v >= 0.5,
            "x B_db",
        ),
        _target(
            "GET context depth 10 p99 at 32 connections",
            "< 25 ms",
            None if ctx is None else ctx.p99_ms,
            lambda v: v < 25,
            "ms",
        ),
        _target(
            "context latency at scale vs 10k",
            "<= 1.3 x",
            None if scale is None else scale.context_depth10_ratio,
            lambda v: v <= 1.3,
            "x",
            at_scale,
        ),
        _target(
            "ancestors latency at scale vs 10k",
            "<= 1.3 x",
            None if scale is None else scale.ancestors_depth10_ratio,
            lambda v: v <= 1.3,
            "x",
            at_scale,
        ),
        _target(
            "descendants of 10,000 p50 end to end",
            "< 80 ms",
            None if descendants_seq is None else descendants_seq.p50_ms,
            lambda v: v < 80,
            "ms",
        ),
        _target(
            "batch create of 100 p50",
            "< 60 ms",
            None if result.writes.batch_100 is None else result.writes.batch_100.p50_ms,
            lambda v: v < 60,
            "ms",
        ),
        _failed_moves(
            moves.move_10000,
            _target(
                "move of 10,000 tenants",
                "< 1.5 s",
                _seconds(moves.move_10000),
                lambda v: v < 1.5,
                "s",
            ),
        ),
        _failed_moves(
            moves.move_100000,
            _target(
                "move of 100,000 tenants",
                "< 15 s",
                _seconds(moves.move_100000),
                lambda v: v < 15,
                "s",
            ),
        ),
        _failed_moves(
            moves.move_100000,
            _target(
                "other requests' p99 during the 100,000 move",
                "<= 2 x",
                interference.p99_ratio
                if interference is not None and moves.move_100000 is not None
                else None,
                lambda v: v <= 2,
                "x quiet p99",
            ),
        ),
        _target(
            "closure vs recursive CTE, descendants of 10,000",
            ">= 3 x faster",
            None if descendants_sql is None else descendants_sql.ratios_p50.get("cte/closure"),
            lambda v: v >= 3,
            "x",
            at_scale,
        ),
        _target(
            "seeding 1,000,000 tenants",
            "< 180 s",
            result.seed.main.total_s if tenants >= MILLION else None,
            lambda v: v < 180,
            "s",
        ),
    ]
    # Runs before the mixed workload existed are judged as they were.
    if result.mixed is not None:
        targets += mixed_targets(result.mixed)
    if result.target_rules >= 2:
        targets += baseline_targets(result)
    if result.target_rules >= 3:
        targets.append(
            _target(
                "batch context read of 100 vs single context reads",
                ">= 10 x the tenants per second",
                batch_ratio(result),
                lambda v: v >= 10,
                "x tenants/s",
            )
        )
    return targets


# The rules new runs are judged by (RunResult.target_rules).
TARGET_RULES = 4


def baseline_targets(result: RunResult) -> list[TargetResult]:
    """Cached reads against the bare handler, the uncached context against B_db. Runs of
    rule 4 on (the service at its default log level, info) are held to 0.5 x B_http,
    earlier ones (logs at warning) to 0.3 x as they were."""
    cached = 0.5 if result.target_rules >= 4 else 0.3
    b_http = _rps(result.baselines.get("B_http"))
    b_db = _rps(result.baselines.get("B_db"))

    def ratio(name: str, baseline: float | None) -> float | None:
        rps = _rps(result.endpoints.get(name))
        return rps / baseline if rps and baseline else None

    return [
        _target(
            "cached GET tenant vs B_http",
            f">= {cached} x B_http RPS",
            ratio("get_tenant", b_http),
            lambda v: v >= cached,
            "x B_http",
        ),
        _target(
            "cached GET context depth 10 vs B_http",
            f">= {cached} x B_http RPS",
            ratio("context_depth10", b_http),
            lambda v: v >= cached,
            "x B_http",
        ),
        _target(
            "uncached GET context depth 10 vs B_db",
            ">= 0.25 x B_db RPS",
            ratio("context_depth10_uncached", b_db),
            lambda v: v >= 0.25,
            "x B_db",
        ),
    ]


def batch_ratio(result: RunResult) -> float | None:
    """Tenants a second through POST /contexts/batch (100 a request) over single context
    reads of the same sampled tenants (cached, as deployed)."""
    batch = _rps(result.endpoints.get("contexts_batch_100"))
    single = _rps(result.endpoints.get("context_samples"))
    return batch * BATCH_TENANTS / single if batch and single else None


# The mixed workload's targets: reads over at least this many tenants at this write rate.
MIXED_TENANTS = 2_000
MIXED_WRITES_PER_S = 50.0


def mixed_targets(mixed: Mixed | None) -> list[TargetResult]:
    phase = None if mixed is None else mixed.phase(MIXED_WRITES_PER_S)
    note = ""
    if mixed is not None and mixed.read_tenants < MIXED_TENANTS:
        note = f"contexts of {mixed.read_tenants:,} tenants read, not {MIXED_TENANTS:,}"
    return [
        _target(
            "context at 50 writes/s vs its no-write rate",
            ">= 0.8 x",
            None if phase is None else phase.x_no_writes,
            lambda v: v >= 0.8,
            "x no-write RPS",
            note,
        ),
        _target(
            "context at 50 writes/s vs B_db",
            ">= 0.5 x B_db RPS",
            None if phase is None else phase.x_b_db,
            lambda v: v >= 0.5,
            "x B_db",
            note,
        ),
        _target(
            "context at 50 writes/s p99",
            "< 25 ms",
            None if phase is None else phase.reads.p99_ms,
            lambda v: v < 25,
            "ms",
            note,
        ),
    ]


def _failed_moves(move: MoveFigures | None, judged: TargetResult) -> TargetResult:
    """A target of a move size some of whose moves failed is not met, whatever the
    figures of the others say."""
    if move is None or not move.errors:
        return judged
    return msgspec.structs.replace(
        judged,
        value=None,
        met=False,
        note=f"{move.errors} of {move.count} moves failed or were given up on",
    )


def _seconds(move: MoveFigures | None) -> float | None:
    """The slowest move's time; a move that failed (or whose answer the client gave up
    on) has no time, and is judged apart (`_move_target`)."""
    return None if move is None or move.errors else move.max_ms / 1000
