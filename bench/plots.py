"""PNG charts of benchmark results (`python -m bench plots FILE...`, the bench extra):
latency against depth, latency against tenant count, and context throughput against the
write rate. Each chart is drawn when the results hold its figures, else left out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# Figure without pyplot: no global state and no display backend, files only.
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from bench.results import RunResult

SIZE = (7.0, 4.2)
DPI = 110


def _figure(title: str) -> tuple[Figure, Axes]:
    figure = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    axes = figure.subplots()
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    return figure, axes


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path


def _depth_points(result: RunResult) -> dict[str, list[tuple[int, float]]]:
    """(depth, p50 ms) of context and ancestors: the depth sweep, or else the fixed
    depths the endpoint measurements hold (read cache off where measured so)."""
    if result.depths is not None and result.depths.points:
        points = result.depths.points
        return {
            "context": [(p.depth, p.context.p50_ms) for p in points],
            "ancestors": [(p.depth, p.ancestors.p50_ms) for p in points],
        }
    found: dict[str, list[tuple[int, float]]] = {"context": [], "ancestors": []}
    for name, figures in result.endpoints.items():
        what, _, rest = name.partition("_depth")
        depth = rest.removesuffix("_uncached")
        if what not in found or not depth.isdigit() or figures.sequential is None:
            continue
        if f"{name}_uncached" in result.endpoints:
            continue  # the uncached figure of the same read is the one that depends on depth
        found[what].append((int(depth), figures.sequential.p50_ms))
    return {what: sorted(points) for what, points in found.items() if points}


def plot_depth(result: RunResult, path: Path) -> Path | None:
    series = _depth_points(result)
    if not series:
        return None
    figure, axes = _figure(f"Latency against depth ({result.seed.main.tenants:,} tenants)")
    for what, points in series.items():
        axes.plot([d for d, _ in points], [ms for _, ms in points], marker="o", label=what)
    axes.set_xlabel("tenant depth")
    axes.set_ylabel("p50 ms, one request at a time")
    axes.set_xlim(0, 32)
    axes.set_ylim(bottom=0)
    axes.legend()
    return _save(figure, path)


def _scale_points(results: Sequence[RunResult]) -> dict[str, dict[int, float]]:
    """p50 ms by tenant count of context and ancestors at depth 10 (read cache off),
    from every file's scale comparison; a later file's figure replaces an earlier one."""
    found: dict[str, dict[int, float]] = {"context": {}, "ancestors": {}}
    for result in results:
        if result.scale is None:
            continue
        for side in (result.scale.small, result.scale.main):
            found["context"][side.tenants] = side.context_depth10.p50_ms
            found["ancestors"][side.tenants] = side.ancestors_depth10.p50_ms
    return {what: points for what, points in found.items() if points}


def _count(tenants: int) -> str:
    if tenants >= 1_000_000 and tenants % 1_000_000 == 0:
        return f"{tenants // 1_000_000}M"
    if tenants >= 1_000 and tenants % 1_000 == 0:
        return f"{tenants // 1_000}k"
    return f"{tenants:,}"


def plot_scale(results: Sequence[RunResult], path: Path) -> Path | None:
    series = _scale_points(results)
    if not series:
        return None
    figure, axes = _figure("Latency at depth 10 against tenant count")
    for what, points in series.items():
        counts = sorted(points)
        axes.plot(counts, [points[c] for c in counts], marker="o", label=what)
    axes.set_xscale("log")
    counts = sorted({c for points in series.values() for c in points})
    axes.set_xticks(counts, labels=[_count(c) for c in counts])
    axes.minorticks_off()
    axes.set_xlabel("tenants in the database")
    axes.set_ylabel("p50 ms, read cache off")
    axes.set_ylim(bottom=0)
    axes.legend()
    return _save(figure, path)


def plot_mixed(result: RunResult, path: Path) -> Path | None:
    mixed = result.mixed
    if mixed is None or not mixed.phases:
        return None
    figure, axes = _figure(f"Context throughput under writes ({mixed.read_tenants:,} tenants)")
    for moves in sorted({p.moves_per_s for p in mixed.phases}):
        points = sorted(
            (p.writes_per_s, p.x_b_db)
            for p in mixed.phases
            if p.moves_per_s == moves and p.x_b_db is not None
        )
        label = "no moves" if moves == 0 else f"{moves:g} move/s"
        axes.plot([w for w, _ in points], [x for _, x in points], marker="o", label=label)
    axes.axhline(
        0.5, color="grey", linestyle="--", linewidth=1, label="target at 50 writes/s: 0.5 x B_db"
    )
    axes.set_xscale("symlog", linthresh=1)
    rates = sorted({p.writes_per_s for p in mixed.phases})
    axes.set_xlim(-0.3, max(rates) * 1.3)
    axes.set_xticks(rates, labels=[f"{rate:g}" for rate in rates])
    axes.minorticks_off()
    axes.set_xlabel("config writes per second")
    axes.set_ylabel("context RPS as x B_db")
    axes.set_ylim(bottom=0)
    axes.legend()
    return _save(figure, path)


def draw_plots(results: Sequence[RunResult], out: Path) -> list[Path]:
    """Every chart the results allow; the per-run charts from the last file."""
    if not results:
        return []
    last = results[-1]
    drawn = [
        plot_depth(last, out / "latency-by-depth.png"),
        plot_scale(results, out / "latency-by-tenants.png"),
        plot_mixed(last, out / "mixed-throughput.png"),
    ]
    return [path for path in drawn if path is not None]
