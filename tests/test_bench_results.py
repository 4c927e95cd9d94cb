"""The benchmark's typed results: every committed results file decodes, renders and
judges its targets as it did when it was written; the move labels and judged reads are
ones the suite produces."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from bench.__main__ import main
from bench.http_suite import READS
from bench.results import Moves, RunResult, encode, load_run
from bench.targets import JUDGED_READS, evaluate_targets

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
