"""The issue's targets, judged from one run's results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MILLION = 1_000_000


def _get(result: dict[str, Any], *path: str) -> Any:
    node: Any = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _target(
    name: str,
    goal: str,
    value: float | None,
    ok: Callable[[float], bool],
    unit: str,
    note: str = "",
) -> dict[str, Any]:
    return {
        "target": name,
        "goal": goal,
        "value": None if value is None else round(value, 3),
        "unit": unit,
        "met": None if value is None else ok(value),
        "note": note if value is not None else note or "not measured in this run",
    }


def evaluate_targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    b_db = _get(result, "baselines", "B_db", "load", "rps")
    get_rps = _get(result, "endpoints", "get_tenant", "load", "rps")
    ctx = _get(result, "endpoints", "context_depth10", "load") or {}
    tenants = _get(result, "seed", "main", "tenants") or 0
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
            ctx["rps"] / b_db if ctx and b_db else None,
            lambda v: v >= 0.5,
            "x B_db",
        ),
        _target(
            "GET context depth 10 p99 at 32 connections",
            "< 25 ms",
            ctx.get("p99_ms"),
            lambda v: v < 25,
            "ms",
        ),
        _target(
            "context latency at scale vs 10k",
            "<= 1.3 x",
            _get(result, "scale", "context_depth10_ratio"),
            lambda v: v <= 1.3,
            "x",
            at_scale,
        ),
        _target(
            "ancestors latency at scale vs 10k",
            "<= 1.3 x",
            _get(result, "scale", "ancestors_depth10_ratio"),
            lambda v: v <= 1.3,
            "x",
            at_scale,
        ),
        _target(
            "descendants of 10,000 p50 end to end",
            "< 80 ms",
            _get(result, "endpoints", "descendants_10000", "sequential", "p50_ms"),
            lambda v: v < 80,
            "ms",
        ),
        _target(
            "batch create of 100 p50",
            "< 60 ms",
            _get(result, "writes", "batch_100", "p50_ms"),
            lambda v: v < 60,
            "ms",
        ),
        _target(
            "move of 10,000 tenants",
            "< 1.5 s",
            _seconds(_get(result, "moves", "move_10000", "max_ms")),
            lambda v: v < 1.5,
            "s",
        ),
        _target(
            "move of 100,000 tenants",
            "< 15 s",
            _seconds(_get(result, "moves", "move_100000", "max_ms")),
            lambda v: v < 15,
            "s",
        ),
        _target(
            "other requests' p99 during the 100,000 move",
            "<= 2 x",
            _get(result, "moves", "interference", "p99_ratio")
            if _get(result, "moves", "move_100000")
            else None,
            lambda v: v <= 2,
            "x quiet p99",
        ),
        _target(
            "closure vs recursive CTE, descendants of 10,000",
            ">= 3 x faster",
            _get(result, "sql", "operations", "descendants_10000", "ratios_p50", "cte/closure"),
            lambda v: v >= 3,
            "x",
            at_scale,
        ),
        _target(
            "seeding 1,000,000 tenants",
            "< 180 s",
            _get(result, "seed", "main", "total_s") if tenants >= MILLION else None,
            lambda v: v < 180,
            "s",
        ),
    ]
    return targets


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000
