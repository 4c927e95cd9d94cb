"""What the benchmark ran on, written into every result file."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

from bench.results import Machine


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _wrk_version() -> str | None:
    if shutil.which("wrk") is None:
        return None
    done = subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False)
    return (done.stdout or done.stderr).splitlines()[0] if (done.stdout or done.stderr) else "wrk"


def describe_machine(postgres_version: str, postgres_kind: str) -> Machine:
    return Machine(
        cpu=_cpu_model(),
        cores=os.cpu_count(),
        memory_gib=_memory_gib(),
        os=platform.platform(),
        python=platform.python_version(),
        postgres=postgres_version,
        postgres_kind=postgres_kind,
        wrk=_wrk_version(),
        note="service, PostgreSQL and load generator share these cores",
    )
