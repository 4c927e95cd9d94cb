"""Instructions per request, counted by valgrind's callgrind: the same figure for the
same code whatever else the machine is doing, where CPU time moves by a third between
runs on a busy virtual machine.

`bench.request_cpu --instructions` starts itself again under callgrind with
instrumentation off (start-up, the seed and the warm-up run at valgrind's uninstrumented
speed), and `Counter.count` switches it on around each measured round only, then dumps
and reads the round's total. callgrind_control finds the process through valgrind's
gdbserver, which valgrind starts by default.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

UNDER_CALLGRIND = "BENCH_UNDER_CALLGRIND"
_TOTALS = re.compile(rb"^totals:\s+(\d+)", re.MULTILINE)


def callgrind_command(argv: Sequence[str], out_dir: Path) -> list[str]:
    """This interpreter under callgrind, instrumentation off until switched on."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (Debian's package valgrind)")
    return [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out_dir}/callgrind.%p",
        # The venv's own path, not the interpreter it links to: a resolved path would
        # start Python without the venv's site-packages.
        sys.executable,
        *argv,
    ]


def rerun_under_callgrind(module: str, args: Sequence[str]) -> int:
    """Run `python -m module args` under callgrind; its exit status."""
    with tempfile.TemporaryDirectory(prefix="callgrind-") as out_dir:
        env = {**os.environ, UNDER_CALLGRIND: out_dir}
        command = callgrind_command(["-m", module, *args], Path(out_dir))
        return subprocess.run(command, env=env, check=False).returncode


def totals(dump: bytes) -> int:
    """The instruction total of one callgrind dump."""
    found = _TOTALS.search(dump)
    if found is None:
        raise ValueError("no totals line in the callgrind dump")
    return int(found.group(1))


class Counter:
    """Counts the instructions of one awaited piece of work, in a process callgrind runs
    (None from `active()` outside one)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.pid = str(os.getpid())
        self._dumps = 0

    @classmethod
    def active(cls) -> Counter | None:
        out_dir = os.environ.get(UNDER_CALLGRIND)
        return cls(Path(out_dir)) if out_dir else None

    def _control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, self.pid], check=True, capture_output=True)

    async def count(self, work: Callable[[], Awaitable[None]]) -> int:
        """Instructions executed by this process while `work` ran."""
        # Nothing is counted while instrumentation is off, and each dump zeroes the
        # counters: the total dumped is this work's.
        self._control("--instr=on")
        try:
            await work()
        finally:
            self._control("--instr=off")
        self._dumps += 1
        self._control(f"--dump=round{self._dumps}")
        # callgrind numbers its dumps from 1; only these rounds dump.
        return totals((self.out_dir / f"callgrind.{self.pid}.{self._dumps}").read_bytes())
