"""The human-readable table printed at the end of a run (the JSON holds everything)."""

from __future__ import annotations

from bench.results import RunResult


def ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value and base else "-"


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_report(result: RunResult) -> str:
    lines: list[str] = []
    machine = result.machine
    lines.append(
        f"machine: {machine.cpu} x{machine.cores}, "
        f"{machine.memory_gib} GiB; {machine.postgres[:40]}; "
        f"load tool {result.options.load_tool}"
    )
    seed = result.seed.main
    lines.append(
        f"seed: {seed.tenants:,} tenants, {seed.closure_rows:,} closure rows, "
        f"{seed.total_s} s (COPY {seed.copy_s} s, indexes {seed.index_s} s)"
    )
    b_http = result.baselines.get("B_http")
    b_db = result.baselines.get("B_db")
    http_rps = None if b_http is None else b_http.load.rps
    db_rps = None if b_db is None else b_db.load.rps
    header = (
        f"{'endpoint':<22}{'conns':>6}{'RPS':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"
        f"{'xB_http':>9}{'xB_db':>7}{'seq p50':>9}{'seq p99':>9}"
    )
    lines += ["", header, "-" * len(header)]
    for name, figures in {**result.baselines, **result.endpoints}.items():
        load, seq = figures.load, figures.sequential
        seq_p50, seq_p99 = (None, None) if seq is None else (seq.p50_ms, seq.p99_ms)
        lines.append(
            f"{name:<22}{load.connections:>6}{load.rps:>10,.0f}"
            f"{_ms(load.p50_ms):>9}{_ms(load.p99_ms):>9}{load.errors:>8}"
            f"{ratio(load.rps, http_rps):>9}{ratio(load.rps, db_rps):>7}"
            f"{_ms(seq_p50):>9}{_ms(seq_p99):>9}"
        )
    lines += [
        "",
        f"{'write (sequential)':<22}{'count':>6}{'p50 ms':>10}{'p99 ms':>9}{'max ms':>9}"
        f"{'errors':>8}",
    ]
    writes: list[tuple[str, int, float | None, float | None, float, int]] = [
        (name, f.count, f.p50_ms, f.p99_ms, f.max_ms, f.errors)
        for name, f in result.writes.all().items()
    ]
    writes += [
        (name, m.count, m.p50_ms, m.p99_ms, m.max_ms, m.errors)
        for name, m in result.moves.sizes().items()
    ]
    for name, count, p50, p99, max_ms, errors in writes:
        lines.append(f"{name:<22}{count:>6}{_ms(p50):>10}{_ms(p99):>9}{_ms(max_ms):>9}{errors:>8}")
    interference = result.moves.interference
    if interference and interference.quiet_p99_ms and interference.during_p99_ms:
        lines.append(
            f"other requests during the largest move: p99 {interference.quiet_p99_ms:.2f}"
            f" ms quiet, {interference.during_p99_ms:.2f} ms during"
            f" (x{interference.p99_ratio})"
        )
    scale = result.scale
    if scale:
        lines.append(
            f"scale ({scale.small.tenants:,} -> {scale.main.tenants:,} tenants), p50: "
            f"context x{scale.context_depth10_ratio}, "
            f"ancestors x{scale.ancestors_depth10_ratio}"
        )
    mixed = result.mixed
    if mixed:
        lines += [
            "",
            f"mixed workload: contexts of {mixed.read_tenants:,} tenants, writes to "
            f"{mixed.write_tenants:,}, moves of {mixed.moved_tenants:,} tenants",
            f"{'writes/s':>9}{'moves/s':>8}{'RPS':>10}{'xB_db':>7}{'xquiet':>8}"
            f"{'p50 ms':>9}{'p99 ms':>9}{'done w/m':>15}{'errors':>8}",
        ]
        for phase in mixed.phases:
            done = "/".join(
                "-" if w is None else f"{w.achieved_per_s:.1f}" for w in (phase.writes, phase.moves)
            )
            errors = sum(w.load.errors for w in (phase.writes, phase.moves) if w is not None)
            lines.append(
                f"{phase.writes_per_s:>9g}{phase.moves_per_s:>8g}{phase.reads.rps:>10,.0f}"
                f"{_x(phase.x_b_db):>7}{_x(phase.x_no_writes):>8}"
                f"{_ms(phase.reads.p50_ms):>9}{_ms(phase.reads.p99_ms):>9}{done:>15}{errors:>8}"
            )
    lines += ["", "targets:"]
    for target in result.targets:
        met = {True: "MET", False: "NOT MET", None: "n/a"}[target.met]
        value = "-" if target.value is None else f"{target.value} {target.unit}"
        note = f"  ({target.note})" if target.note else ""
        lines.append(f"  [{met:>7}] {target.target}: {value} (goal {target.goal}){note}")
    return "\n".join(lines)
