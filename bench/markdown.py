"""Markdown tables of a results file, for docs/performance.md:
`python -m bench markdown bench/results/FILE.json`."""

from __future__ import annotations

from typing import Any

from bench.report import ratio


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def endpoints_table(result: dict[str, Any]) -> str:
    baselines = result.get("baselines", {})
    b_http = baselines.get("B_http", {}).get("load", {}).get("rps")
    b_db = baselines.get("B_db", {}).get("load", {}).get("rps")
    lines = [
        "| endpoint | conns | RPS | p50 ms | p99 ms | errors | x B_http | x B_db "
        "| sequential p50 ms | sequential p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in {**baselines, **result.get("endpoints", {})}.items():
        load, seq = figures.get("load", {}), figures.get("sequential", {})
        lines.append(
            f"| {name} | {load.get('connections', '-')} | {_num(load.get('rps'), 0)} "
            f"| {_num(load.get('p50_ms'))} | {_num(load.get('p99_ms'))} "
            f"| {load.get('errors', 0)} | {ratio(load.get('rps'), b_http)} "
            f"| {ratio(load.get('rps'), b_db)} | {_num(seq.get('p50_ms'))} "
            f"| {_num(seq.get('p99_ms'))} |"
        )
    return "\n".join(lines)


def writes_table(result: dict[str, Any]) -> str:
    lines = [
        "| operation | tenants | samples | p50 ms | p99 ms | max ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rows = {**result.get("writes", {}), **result.get("moves", {})}
    for name, figures in rows.items():
        if name == "interference":
            continue
        lines.append(
            f"| {name} | {figures.get('tenants_moved', '-')} | {figures.get('count', '-')} "
            f"| {_num(figures.get('p50_ms'))} | {_num(figures.get('p99_ms'))} "
            f"| {_num(figures.get('max_ms'))} | {figures.get('errors', 0)} |"
        )
    return "\n".join(lines)


def targets_table(result: dict[str, Any]) -> str:
    lines = ["| target | goal | measured | met |", "|---|---|---:|---|"]
    for target in result.get("targets", []):
        met = {True: "yes", False: "**no**", None: "not measured"}[target["met"]]
        value = "-" if target["value"] is None else f"{target['value']} {target['unit']}"
        lines.append(f"| {target['target']} | {target['goal']} | {value} | {met} |")
    return "\n".join(lines)


def sql_table(result: dict[str, Any]) -> str:
    sql = result.get("sql")
    if not sql:
        return ""
    lines = [
        "| operation | rows | closure p50 ms | CTE p50 ms | ltree p50 ms | CTE / closure "
        "| ltree / closure |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in sql["operations"].items():
        strategies = entry["strategies"]
        rows = strategies["closure"]["rows"]
        cells = [_num(strategies.get(s, {}).get("p50_ms"), 3) for s in ("closure", "cte", "ltree")]
        ratios = entry["ratios_p50"]
        lines.append(
            f"| {name} | {rows:,} | {' | '.join(cells)} "
            f"| {ratios.get('cte/closure') or '-'} | {ratios.get('ltree/closure') or '-'} |"
        )
    return "\n".join(lines)


def render(result: dict[str, Any]) -> str:
    parts = [endpoints_table(result), writes_table(result), targets_table(result)]
    sql = sql_table(result)
    if sql:
        parts.append(sql)
    return "\n\n".join(parts)
