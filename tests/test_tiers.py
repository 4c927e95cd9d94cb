"""The quick tier holds no process-starting module: tests/tiers.py lists every one.
And a contributor finds a feature's tests: docs/testing.md's map names every module."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from tests.tiers import QUICK, SLOW_TESTS, TIERS, left_out_of, marks_of, marks_of_test

TESTS = Path(__file__).resolve().parent
TESTING_DOC = TESTS.parent / "docs" / "testing.md"

# What a module that starts a process contains (directly, or through a support helper).
STARTS_PROCESSES = re.compile(
    r"\bsubprocess\b|create_subprocess_exec|\bPopen\b|ServiceProcess|running_services"
    r"|run_cli|support\.own_postgres|support\.cluster|support\.pgbouncer|support\.browser"
    r"|support\.node_tools|support\.ha\b|tests\.test_console_browser import"
    r"|start_service|\bnode\b.*\brun\(|chromium"
)
TIER_MARKERS = {"processes", "browser", "cluster"}


def module_names() -> list[str]:
    return sorted(path.stem for path in TESTS.glob("test_*.py"))


def starts_processes(text: str) -> bool:
    return STARTS_PROCESSES.search(text) is not None


@pytest.mark.parametrize("module", module_names())
def test_a_module_that_starts_processes_is_not_quick(module: str) -> None:
    if module == "test_tiers":
        return
    text = (TESTS / f"{module}.py").read_text(encoding="utf-8")
    if starts_processes(text):
        assert TIER_MARKERS & set(marks_of(module)), (
            f"{module} starts processes: list it in tests/tiers.py"
        )


def test_every_listed_module_exists() -> None:
    existing = set(module_names())
    listed = set().union(*TIERS.values())
    assert listed - existing == set()


def test_every_listed_slow_test_exists() -> None:
    for name in SLOW_TESTS:
        module, function = name.split("::")
        text = (TESTS / f"{module}.py").read_text(encoding="utf-8")
        assert re.search(rf"^(async )?def {function}\(", text, re.MULTILINE), name
        assert marks_of_test(module, function) == [*marks_of(module), "slow"]


def test_make_quick_is_the_quick_expression() -> None:
    """So that `make quick` does not import the modules it leaves out (left_out_of)."""
    makefile = (TESTS.parent / "Makefile").read_text(encoding="utf-8")
    assert f'-m "{QUICK}"' in makefile
    # and runs it in pytest-xdist workers (docs/testing.md), which collect the same way
    quick = next(line for line in makefile.splitlines() if f'-m "{QUICK}"' in line)
    assert "-n $(QUICK_WORKERS)" in quick
    assert re.search(r"^QUICK_WORKERS \?= [1-9]", makefile, re.MULTILINE)
    assert left_out_of(QUICK, "test_schemathesis")
    assert not left_out_of(QUICK, "test_tiers")
    assert not left_out_of("processes", "test_cli")


def test_the_scan_sees_a_process() -> None:
    assert starts_processes("done = subprocess.run(['psql'])")
    assert starts_processes("from tests.support.processes import ServiceProcess")
    assert not starts_processes("async def test_x(client): await client.get('/health')")


def test_markers_reach_the_items(request: pytest.FixtureRequest) -> None:
    """conftest applies the table: this module is quick, test_cli would not be."""
    assert marks_of("test_cli") == ["processes"]
    assert not any(m.name in TIERS for m in request.node.iter_markers())


def feature_map() -> list[str]:
    """The module names and patterns of docs/testing.md's "where a feature's tests are"."""
    text = TESTING_DOC.read_text(encoding="utf-8")
    table = text.split("| feature | test modules |", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"`(test_[a-z0-9_*]*)`", table)


def test_every_module_is_in_the_feature_map() -> None:
    patterns = feature_map()
    unmapped = [m for m in module_names() if not any(fnmatch.fnmatch(m, p) for p in patterns)]
    assert unmapped == [], "add these to the table in docs/testing.md"
    stale = [p for p in patterns if not fnmatch.filter(module_names(), p)]
    assert stale == [], "these names in docs/testing.md match no test module"
