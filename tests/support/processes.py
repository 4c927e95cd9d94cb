"""Running the real service as a subprocess (for CLI, signal and multi-process tests)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

KEY_PATTERN = re.compile(r"sk_(?:live|test)_[0-9A-Za-z]{49}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def service_env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "PG"))}
    env.update(overrides)
    return env


def run_cli(
    *args: str, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class ServiceProcess:
    """`tenant-service serve` on a free port; stdout and stderr go to a file."""

    def __init__(self, env: Mapping[str, str], workdir: Path, *extra: str) -> None:
        self.port = free_port()
        self.log_path = workdir / f"service-{self.port}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(self.port),
             "--host", "127.0.0.1", *extra],
            env=dict(env), stdout=self._log, stderr=subprocess.STDOUT, cwd=workdir,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"service exited {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1) as resp:  # noqa: S310
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"service did not become ready:\n{self.output()}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode
