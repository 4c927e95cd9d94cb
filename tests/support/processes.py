"""Real `tenant-service serve` processes for multi-process tests: free loopback ports,
a wait for /health, and termination whatever happens."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServiceProcess:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _stop(service: ServiceProcess) -> None:
    if service.proc.poll() is None:
        service.proc.terminate()
        try:
            service.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            service.proc.kill()
            service.proc.wait(timeout=5)


@contextlib.contextmanager
def running_services(
    count: int, env: Mapping[str, str], log_dir: Path
) -> Iterator[list[ServiceProcess]]:
    """Start `count` service processes with this environment; stop them on exit."""
    services: list[ServiceProcess] = []
    try:
        for index in range(count):
            port = free_port()
            log_path = log_dir / f"service-{index}.log"
            with log_path.open("wb") as log_file:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1",
                     "--port", str(port)],
                    cwd=REPO_ROOT,
                    env={"PATH": os.environ.get("PATH", ""), **env},
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            services.append(ServiceProcess(proc, port, log_path))
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        for service in services:
            while not _healthy(service.port):
                if service.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"service did not start:\n{service.log()[-4000:]}")
                time.sleep(0.05)
        yield services
    finally:
        for service in services:
            _stop(service)
