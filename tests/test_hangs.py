"""A test that waits forever fails after its bound and says where it waited
(tests/support/hangs.py): the suite goes on to the next test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HANGING = """
import asyncio

import pytest


async def parked() -> None:
    await asyncio.Event().wait()


@pytest.mark.timeout(2)
async def test_waits_forever() -> None:
    await asyncio.gather(parked(), asyncio.Event().wait())


def test_next() -> None:
    pass
"""


def test_a_hung_test_fails_with_its_tasks_and_the_next_one_runs(tmp_path: Path) -> None:
    (tmp_path / "test_hanging.py").write_text(HANGING)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.hangs"]\n')
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", "/dev/null", "-o", "asyncio_mode=auto",
         str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent,
    )  # fmt: skip
    out = run.stdout
    assert "1 failed, 1 passed" in out, out[-2000:]
    assert "Timeout (>2.0s): the asyncio tasks are on stderr" in out
    assert "asyncio tasks at the timeout" in out
    # The task the test was waiting on, at the line it waits at.
    assert "in parked" in out
    assert "await asyncio.Event().wait()" in out
