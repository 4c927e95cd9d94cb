"""bench/instructions.py counts the instructions of the work it is given, and only of
that work: twice the work under callgrind counts twice the instructions, and a dump
without totals is an error, not a zero."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.instructions import UNDER_CALLGRIND, Counter, callgrind_command, totals

ROOT = Path(__file__).resolve().parent.parent

# Counts a loop of n and of 2n iterations, each between two stretches of work that is
# not counted (which would show if instrumentation stayed on).
SCRIPT = textwrap.dedent(
    """
    import asyncio

    from bench.instructions import Counter


    def spin(n):
        total = 0
        for i in range(n):
            total += i * i
        return total


    async def main():
        counter = Counter.active()
        assert counter is not None
        figures = []
        for n in (20_000, 40_000):
            spin(200_000)

            async def work(n=n):
                spin(n)

            figures.append(await counter.count(work))
            spin(200_000)
        print(*figures)


    asyncio.run(main())
    """
)


def test_totals_reads_the_dumps_total() -> None:
    dump = b"version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 0\ntotals: 70229786\n"
    assert totals(dump) == 70_229_786
    with pytest.raises(ValueError, match="no totals"):
        totals(b"events: Ir\nsummary: 0\n")


def test_the_command_keeps_the_venvs_interpreter_and_starts_uninstrumented(
    tmp_path: Path,
) -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    command = callgrind_command(["-m", "bench.request_cpu", "--instructions"], tmp_path)
    assert command[1:4] == [
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={tmp_path}/callgrind.%p",
    ]
    assert command[4] == sys.executable  # not the interpreter it links to
    assert command[5:] == ["-m", "bench.request_cpu", "--instructions"]


def test_no_counter_outside_callgrind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNDER_CALLGRIND, raising=False)
    assert Counter.active() is None


def test_twice_the_work_counts_twice_the_instructions(tmp_path: Path) -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        pytest.skip("valgrind is not installed")
    script = tmp_path / "spin.py"
    script.write_text(SCRIPT)
    env = {**os.environ, UNDER_CALLGRIND: str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        callgrind_command([str(script)], tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    single, double = (int(word) for word in done.stdout.split())
    # The loop of 20,000 is several million instructions; the uncounted work around it
    # (200,000 iterations) would add ten times that.
    assert 1_000_000 < single < 20_000_000
    assert 1.9 < double / single < 2.1
