"""The benchmark's typed results: every committed results file decodes, renders and
judges its targets as it did when it was written; the move labels and judged reads are
ones the suite produces."""

from __future__ import annotations

import uuid
from pathlib import Path

import msgspec
import pytest

from bench.__main__ import main
from bench.http_suite import BATCH_TENANTS, READS, read_targets
from bench.results import Moves, RunResult, encode, load_run
from bench.seed import SeedReport
from bench.shapes import SeedPlan
from bench.targets import JUDGED_READS, TARGET_RULES, evaluate_targets

RESULTS = sorted((Path(__file__).resolve().parent.parent / "bench" / "results").glob("*.json"))


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_a_committed_result_decodes_and_judges_its_targets_again(path: Path) -> None:
    result = load_run(path)
    assert evaluate_targets(result) == result.targets
    assert msgspec.json.decode(encode(result), type=RunResult) == result


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_markdown_renders_a_committed_result(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["markdown", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| endpoint | conns | RPS |")
    assert "| get_tenant | 32 |" in out
    assert "| move_10000 | 10001 |" in out


def test_the_results_name_what_the_suite_measures() -> None:
    assert RESULTS
    assert set(JUDGED_READS) <= {"get_tenant", *READS}
    move_labels = {"move_1", "move_1000", "move_10000", "move_100000"}
    assert move_labels <= set(Moves.__struct_fields__)


def test_the_batch_context_read_is_judged_against_single_reads_of_the_same_tenants() -> None:
    committed = load_run(RESULTS[0])
    single = committed.endpoints["get_tenant"]
    load = single.load
    endpoints = {
        **committed.endpoints,
        "context_samples": single,
        "contexts_batch_100": msgspec.structs.replace(
            single, load=msgspec.structs.replace(load, rps=load.rps / 20)
        ),
    }
    run = msgspec.structs.replace(committed, endpoints=endpoints, target_rules=TARGET_RULES)
    judged = {t.target: t for t in evaluate_targets(run)}
    batch = judged["batch context read of 100 vs single context reads"]
    assert (batch.value, batch.met, batch.unit) == (5.0, False, "x tenants/s")
    # Runs judged by earlier rules keep the targets they were written with.
    earlier = msgspec.structs.replace(run, target_rules=2)
    assert "batch context read of 100 vs single context reads" not in {
        t.target for t in evaluate_targets(earlier)
    }


def test_batches_are_whole_and_name_sampled_tenants() -> None:
    samples = [str(uuid.UUID(int=i)) for i in range(1, 251)]
    seed = SeedReport(
        plan=SeedPlan.for_total(10_000), tenants=10_000, closure_rows=0, config_entries=0,
        permission_policies=0, generate_s=0, copy_s=0, index_s=0, total_s=0,
        landmarks={}, depths={}, samples=samples,
    )  # fmt: skip
    targets = read_targets(seed)
    batches = targets["contexts_batch_100"]
    assert len(batches) == len(seed.samples) // BATCH_TENANTS
    named = [tid for t in batches for tid in msgspec.json.decode(t.body or b"")["tenant_ids"]]
    assert named == seed.samples[: len(named)]
    assert [t.path for t in targets["context_samples"]] == [
        f"/api/v1/tenants/{tid}/context" for tid in seed.samples
    ]


def test_cached_reads_are_held_to_half_of_b_http_from_rule_4_on() -> None:
    """Runs of rule 4 on (the service at info, its default log level) judge the cached
    reads against 0.5 x B_http; earlier runs keep their 0.3."""
    committed = load_run(RESULTS[0])
    b_http = committed.baselines["B_http"].load.rps
    endpoints = dict(committed.endpoints)
    for name in ("get_tenant", "context_depth10"):
        endpoint = endpoints[name]
        endpoints[name] = msgspec.structs.replace(
            endpoint, load=msgspec.structs.replace(endpoint.load, rps=b_http * 0.4)
        )
    run = msgspec.structs.replace(committed, endpoints=endpoints, target_rules=4)
    for rules, met, wanted in ((4, False, ">= 0.5 x B_http RPS"), (3, True, ">= 0.3 x B_http RPS")):
        judged = {
            t.target: t for t in evaluate_targets(msgspec.structs.replace(run, target_rules=rules))
        }
        for target in ("cached GET tenant vs B_http", "cached GET context depth 10 vs B_http"):
            assert (judged[target].value, judged[target].met) == (pytest.approx(0.4), met)
            assert judged[target].goal == wanted


def test_a_move_size_with_a_failed_move_is_not_met() -> None:
    """A move the client gave up on (or that failed) leaves no time to judge: its size's
    target, and for the largest the other requests' p99 during it, are not met."""
    committed = load_run(Path(__file__).parent.parent / "bench/results/full-round6.json")
    moves = committed.moves
    assert moves.move_10000 is not None
    assert moves.move_100000 is not None
    failed = msgspec.structs.replace(
        moves,
        move_10000=msgspec.structs.replace(moves.move_10000, errors=1),
        move_100000=msgspec.structs.replace(moves.move_100000, errors=2, max_ms=8.9),
    )
    judged = {
        t.target: t for t in evaluate_targets(msgspec.structs.replace(committed, moves=failed))
    }
    for target, note in (
        ("move of 10,000 tenants", "1 of 2 moves failed or were given up on"),
        ("move of 100,000 tenants", "2 of 4 moves failed or were given up on"),
        ("other requests' p99 during the 100,000 move", "2 of 4 moves failed or were given up on"),
    ):
        assert (judged[target].met, judged[target].value, judged[target].note) == (
            False,
            None,
            note,
        )
    as_run = {t.target: t.met for t in evaluate_targets(committed)}
    assert as_run["move of 10,000 tenants"] is True
    assert as_run["move of 100,000 tenants"] is True
