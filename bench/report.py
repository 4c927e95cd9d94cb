"""The human-readable table printed at the end of a run (the JSON holds everything)."""

from __future__ import annotations

from typing import Any


def ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value and base else "-"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_report(result: dict[str, Any]) -> str:
    lines: list[str] = []
    machine = result.get("machine", {})
    lines.append(
        f"machine: {machine.get('cpu')} x{machine.get('cores')}, "
        f"{machine.get('memory_gib')} GiB; {machine.get('postgres', '')[:40]}; "
        f"load tool {result['options']['load_tool']}"
    )
    seed = result.get("seed", {}).get("main", {})
    lines.append(
        f"seed: {seed.get('tenants', 0):,} tenants, {seed.get('closure_rows', 0):,} closure rows, "
        f"{seed.get('total_s')} s (COPY {seed.get('copy_s')} s, indexes {seed.get('index_s')} s)"
    )
    baselines = result.get("baselines", {})
    b_http = baselines.get("B_http", {}).get("load", {}).get("rps")
    b_db = baselines.get("B_db", {}).get("load", {}).get("rps")
    header = (
        f"{'endpoint':<22}{'conns':>6}{'RPS':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
        f"{'xB_http':>9}{'xB_db':>7}{'seq p50':>9}{'seq p99':>9}"
    )
    lines += ["", header, "-" * len(header)]
    rows = {**baselines, **result.get("endpoints", {})}
    for name, figures in rows.items():
        load = figures.get("load", {})
        seq = figures.get("sequential", {})
        lines.append(
            f"{name:<22}{load.get('connections', 0):>6}{load.get('rps', 0):>10,.0f}"
            f"{_ms(load.get('p50_ms')):>9}{_ms(load.get('p99_ms')):>9}{load.get('errors', 0):>8}"
            f"{ratio(load.get('rps'), b_http):>9}{ratio(load.get('rps'), b_db):>7}"
            f"{_ms(seq.get('p50_ms')):>9}{_ms(seq.get('p99_ms')):>9}"
        )
    lines += [
        "",
        f"{'write (sequential)':<22}{'count':>6}{'p50 ms':>10}{'p99 ms':>9}{'max ms':>9}"
        f"{'errors':>8}",
    ]
    writes = {**result.get("writes", {}), **result.get("moves", {})}
    for name, figures in writes.items():
        if name == "interference":
            continue
        lines.append(
            f"{name:<22}{figures.get('count', 0):>6}{_ms(figures.get('p50_ms')):>10}"
            f"{_ms(figures.get('p99_ms')):>9}"
            f"{_ms(figures.get('max_ms')):>9}{figures.get('errors', 0):>8}"
        )
    interference = result.get("moves", {}).get("interference")
    if interference:
        lines.append(
            f"other requests during the largest move: p99 {interference['quiet_p99_ms']:.2f}"
            f" ms quiet, {interference['during_p99_ms']:.2f} ms during"
            f" (x{interference['p99_ratio']})"
        )
    scale = result.get("scale")
    if scale:
        lines.append(
            f"scale ({scale['small']['tenants']:,} -> {scale['main']['tenants']:,} tenants), p50: "
            f"context x{scale['context_depth10_ratio']}, "
            f"ancestors x{scale['ancestors_depth10_ratio']}"
        )
    lines += ["", "targets:"]
    for target in result.get("targets", []):
        met = {True: "MET", False: "NOT MET", None: "n/a"}[target["met"]]
        value = "-" if target["value"] is None else f"{target['value']} {target['unit']}"
        note = f"  ({target['note']})" if target["note"] else ""
        lines.append(f"  [{met:>7}] {target['target']}: {value} (goal {target['goal']}){note}")
    return "\n".join(lines)
