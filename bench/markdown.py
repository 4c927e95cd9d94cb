"""Markdown tables of a results file, for docs/performance.md:
`python -m bench markdown bench/results/FILE.json`."""

from __future__ import annotations

from bench.report import ratio
from bench.results import RunResult


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def endpoints_table(result: RunResult) -> str:
    b_http = result.baselines.get("B_http")
    b_db = result.baselines.get("B_db")
    http_rps = None if b_http is None else b_http.load.rps
    db_rps = None if b_db is None else b_db.load.rps
    lines = [
        "| endpoint | conns | RPS | p50 ms | p99 ms | errors | x B_http | x B_db "
        "| sequential p50 ms | sequential p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in {**result.baselines, **result.endpoints}.items():
        load, seq = figures.load, figures.sequential
        lines.append(
            f"| {name} | {load.connections} | {_num(load.rps, 0)} "
            f"| {_num(load.p50_ms)} | {_num(load.p99_ms)} "
            f"| {load.errors} | {ratio(load.rps, http_rps)} "
            f"| {ratio(load.rps, db_rps)} | {_num(None if seq is None else seq.p50_ms)} "
            f"| {_num(None if seq is None else seq.p99_ms)} |"
        )
    return "\n".join(lines)


def writes_table(result: RunResult) -> str:
    lines = [
        "| operation | tenants | samples | p50 ms | p99 ms | max ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, series in result.writes.all().items():
        lines.append(
            f"| {name} | - | {series.count} | {_num(series.p50_ms)} | {_num(series.p99_ms)} "
            f"| {_num(series.max_ms)} | {series.errors} |"
        )
    for name, move in result.moves.sizes().items():
        lines.append(
            f"| {name} | {move.tenants_moved} | {move.count} | {_num(move.p50_ms)} "
            f"| {_num(move.p99_ms)} | {_num(move.max_ms)} | {move.errors} |"
        )
    return "\n".join(lines)


def mixed_table(result: RunResult) -> str:
    mixed = result.mixed
    if mixed is None:
        return ""
    lines = [
        f"Contexts of {mixed.read_tenants:,} tenants read at random; config writes to "
        f"{mixed.write_tenants:,} tenants {mixed.write_depth} levels below their roots; "
        f"moves of a subtree of {mixed.moved_tenants:,} tenants.",
        "",
        "| writes/s | moves/s | context RPS | x B_db | x no-write | p50 ms | p99 ms "
        "| writes done/s | write errors | moves done/s | move errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for phase in mixed.phases:
        reads, writes, moves = phase.reads, phase.writes, phase.moves
        lines.append(
            f"| {phase.writes_per_s:g} | {phase.moves_per_s:g} | {_num(reads.rps, 0)} "
            f"| {_num(phase.x_b_db)} | {_num(phase.x_no_writes)} | {_num(reads.p50_ms)} "
            f"| {_num(reads.p99_ms)} "
            f"| {_num(None if writes is None else writes.achieved_per_s, 1)} "
            f"| {'-' if writes is None else writes.load.errors} "
            f"| {_num(None if moves is None else moves.achieved_per_s, 1)} "
            f"| {'-' if moves is None else moves.load.errors} |"
        )
    return "\n".join(lines)


def targets_table(result: RunResult) -> str:
    lines = ["| target | goal | measured | met |", "|---|---|---:|---|"]
    for target in result.targets:
        met = {True: "yes", False: "**no**", None: "not measured"}[target.met]
        value = "-" if target.value is None else f"{target.value} {target.unit}"
        lines.append(f"| {target.target} | {target.goal} | {value} | {met} |")
    return "\n".join(lines)


def sql_table(result: RunResult) -> str:
    sql = result.sql
    if not sql:
        return ""
    lines = [
        "| operation | rows | closure p50 ms | CTE p50 ms | ltree p50 ms | CTE / closure "
        "| ltree / closure |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in sql.operations.items():
        strategies = entry.strategies
        rows = strategies["closure"].rows
        cells = [
            _num(None if s not in strategies else strategies[s].p50_ms, 3)
            for s in ("closure", "cte", "ltree")
        ]
        ratios = entry.ratios_p50
        lines.append(
            f"| {name} | {rows:,} | {' | '.join(cells)} "
            f"| {ratios.get('cte/closure') or '-'} | {ratios.get('ltree/closure') or '-'} |"
        )
    return "\n".join(lines)


def render(result: RunResult) -> str:
    parts = [
        endpoints_table(result),
        writes_table(result),
        mixed_table(result),
        targets_table(result),
        sql_table(result),
    ]
    return "\n\n".join(part for part in parts if part)
