"""The mixed-workload benchmark's picks and typed results, its targets, its markdown, and
the charts drawn from a small synthetic run (no load, no database)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from bench.__main__ import main
from bench.mixed import config_writes, phases, summarise
from bench.mixed_picks import WRITE_DEPTH, pick_mixed
from bench.plots import draw_plots
from bench.results import (
    DepthPoint,
    DepthSweep,
    LoadFigures,
    Mixed,
    RunResult,
    SeriesFigures,
    TargetResult,
    WriterFigures,
    encode,
    load_run,
)
from bench.shapes import SeedPlan, build_forest
from bench.targets import evaluate_targets, mixed_targets

RESULTS = Path(__file__).resolve().parent.parent / "bench" / "results"


def _load(rps: float, p99: float) -> LoadFigures:
    return LoadFigures(
        tool="wrk", connections=32, duration_s=5.0, requests=int(rps * 5), errors=0,
        rps=rps, p50_ms=p99 / 4, p99_ms=p99, max_ms=p99 * 2,
    )  # fmt: skip


def _writer(rate: float) -> WriterFigures:
    return WriterFigures(rate_per_s=rate, achieved_per_s=rate, load=_load(rate, 30.0))


def _mixed() -> Mixed:
    picks = pick_mixed(build_forest(SeedPlan.for_total(20_000)), seed=1)
    measured = [
        (w, m, _load(rps, p99), _writer(w) if w else None, _writer(m) if m else None)
        for (w, m), (rps, p99) in zip(
            phases(),
            [(4000, 10), (3600, 12), (3000, 20), (3800, 11), (3400, 14), (2000, 40)],
            strict=True,
        )
    ]
    return summarise(picks, 5000.0, measured)


def _sample_run() -> RunResult:
    depth_series = [
        SeriesFigures(count=50, errors=0, p50_ms=1 + d / 10, p99_ms=3, max_ms=4, mean_ms=2,
                      statuses={"200": 50})
        for d in range(2)
    ]  # fmt: skip
    committed = load_run(RESULTS / "quick-after-optimizations.json")
    depths = DepthSweep(
        read_cache="off",
        points=[
            DepthPoint(depth=d, context=depth_series[0], ancestors=depth_series[1])
            for d in (1, 10, 31)
        ],
    )
    run = msgspec.structs.replace(committed, mixed=_mixed(), depths=depths)
    return msgspec.structs.replace(run, targets=evaluate_targets(run))


def test_the_picks_are_leaves_below_the_written_tenants() -> None:
    forest = build_forest(SeedPlan.for_total(20_000))
    picks = pick_mixed(forest, seed=1)
    index = {str(node_id): node for node, node_id in enumerate(forest.ids)}
    assert len(picks.reads) == 2_500
    written = {index[tid] for tid in picks.writes}
    assert {forest.depths[node] for node in written} == {WRITE_DEPTH}
    for tid in picks.reads:
        node = index[tid]
        assert forest.depths[node] > WRITE_DEPTH
        assert node not in forest.parents  # a leaf
        while forest.depths[node] > WRITE_DEPTH:
            node = forest.parents[node]
        assert node in written
    assert picks.move_subject is not None
    subject = index[picks.move_subject]
    assert forest.depths[subject] == WRITE_DEPTH + 1
    assert str(forest.ids[forest.parents[subject]]) == picks.move_parent
    assert picks.moved_tenants >= 1


def test_consecutive_writes_to_one_tenant_change_its_value() -> None:
    picks = pick_mixed(build_forest(SeedPlan.for_total(20_000)), seed=1)
    writes = config_writes(picks)
    assert len(writes) == 2 * len(picks.writes)
    first_tenant = writes[:: len(picks.writes)]
    assert len({t.path for t in first_tenant}) == 1
    assert len({t.body for t in first_tenant}) == 2
    assert len({(t.path, t.body) for t in writes}) == len(writes)
    # Each phase starts from the first tenant again: its values must differ from every
    # earlier phase's, or its writes would change nothing.
    later = config_writes(picks, phase=2)
    assert not {(t.path, t.body) for t in writes} & {(t.path, t.body) for t in later}


def test_the_phases_are_ratios_to_b_db_and_to_the_quiet_phase() -> None:
    mixed = _mixed()
    assert [(p.writes_per_s, p.moves_per_s) for p in mixed.phases] == [
        (0.0, 0.0), (5.0, 0.0), (50.0, 0.0), (0.0, 1.0), (5.0, 1.0), (50.0, 1.0),
    ]  # fmt: skip
    at_50 = mixed.phase(50.0)
    assert at_50 is not None
    assert (at_50.x_b_db, at_50.x_no_writes) == (0.6, 0.75)
    quiet = mixed.phase(0.0)
    assert quiet is not None
    assert (quiet.writes, quiet.moves, quiet.x_no_writes) == (None, None, 1.0)
    assert msgspec.json.decode(encode(mixed), type=Mixed) == mixed


def test_the_mixed_targets_are_judged() -> None:
    assert mixed_targets(_mixed()) == [
        TargetResult(
            target="context at 50 writes/s vs its no-write rate", goal=">= 0.8 x", value=0.75,
            unit="x no-write RPS", met=False, note="",
        ),
        TargetResult(
            target="context at 50 writes/s vs B_db", goal=">= 0.5 x B_db RPS", value=0.6,
            unit="x B_db", met=True, note="",
        ),
        TargetResult(
            target="context at 50 writes/s p99", goal="< 25 ms", value=20.0, unit="ms", met=True,
            note="",
        ),
    ]  # fmt: skip
    assert [t.met for t in mixed_targets(None)] == [None, None, None]


def test_a_run_with_the_mixed_workload_round_trips_and_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _sample_run()
    path = tmp_path / "run.json"
    path.write_bytes(encode(run))
    assert load_run(path) == run
    assert evaluate_targets(load_run(path)) == run.targets
    assert main(["markdown", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| 50 | 0 | 3,000 | 0.60 | 0.75 | 5.00 | 20.00 | 50.0 | 0 | - | - |" in out
    assert "| context at 50 writes/s p99 | < 25 ms | 20.0 ms | yes |" in out


def test_the_plots_render_from_a_small_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _sample_run()
    drawn = draw_plots([run], tmp_path)
    assert [p.name for p in drawn] == [
        "latency-by-depth.png", "latency-by-tenants.png", "mixed-throughput.png",
    ]  # fmt: skip
    for path in drawn:
        assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    source = tmp_path / "run.json"
    source.write_bytes(encode(run))
    assert main(["plots", str(source), "--out", str(tmp_path / "cli")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        str(tmp_path / "cli" / name) for name in (p.name for p in drawn)
    ]
