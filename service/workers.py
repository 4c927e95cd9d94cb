"""`serve --workers N`: a supervisor and N service processes on one port.

Each worker is a whole service process (`serve --worker-of <parent pid>`) that binds the
port with SO_REUSEPORT, so the kernel spreads new connections over them. They share
nothing but PostgreSQL (and Redis for rate limits): the parent starts the embedded
PostgreSQL once when DATABASE_URL is unset and hands its URL to every worker. Migrations
and the development key run in every worker under advisory locks, so they happen once.

The parent forwards SIGTERM and SIGINT, waits for the workers (each stops gracefully),
then stops the database. A worker that exits on its own brings the others down too, so
the supervisor above this one (systemd, Kubernetes, Docker) sees the failure and restarts
the whole service rather than running short-handed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from types import FrameType

from service.observability.logs import get_logger
from service.observability.metrics import MULTIPROC_ENV, mark_worker_dead
from service.settings.options import Settings

log = get_logger("service.workers")
POLL_SECONDS = 0.2
# Past the workers' own shutdown bound, a worker that still runs is killed.
KILL_GRACE_SECONDS = 10.0


class Supervisor:
    def __init__(self, settings: Settings, count: int) -> None:
        assert settings.database_url is not None
        self.settings = settings
        self.count = count
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stopping_since: float | None = None
        self.failed = False

    def run(self) -> int:
        metrics_dir = os.environ.get(MULTIPROC_ENV) or tempfile.mkdtemp(
            prefix="tenant-service-metrics-"
        )
        own_dir = MULTIPROC_ENV not in os.environ
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self._start(metrics_dir)
            self._wait(metrics_dir)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if own_dir:
                shutil.rmtree(metrics_dir, ignore_errors=True)
        codes = [p.returncode for p in self.procs]
        log.info("workers stopped", exit_codes=codes)
        return 1 if self.failed or any(codes) else 0

    def _start(self, metrics_dir: str) -> None:
        assert self.settings.database_url is not None
        env = {
            **os.environ,
            "DATABASE_URL": self.settings.database_url,
            MULTIPROC_ENV: metrics_dir,
            # Each worker's share of a local rate limit is limit // WORKERS.
            "WORKERS": str(self.count),
        }
        command = [
            sys.executable, "-m", "service", "serve",
            "--port", str(self.settings.port), "--host", self.settings.host,
            "--worker-of", str(os.getpid()),
        ]  # fmt: skip
        for _ in range(self.count):
            if self.stopping_since is not None:
                break  # a signal arrived while starting: start no more
            self.procs.append(subprocess.Popen(command, env=env))  # noqa: S603
        log.info(
            "workers started",
            workers=len(self.procs),
            pids=[p.pid for p in self.procs],
            port=self.settings.port,
        )

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        log.info("stopping workers", signal=signal.Signals(signum).name)
        self._stop_all()

    def _stop_all(self) -> None:
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    def _wait(self, metrics_dir: str) -> None:
        running = set(range(len(self.procs)))
        bound = self.settings.shutdown_timeout_seconds + KILL_GRACE_SECONDS
        while running:
            time.sleep(POLL_SECONDS)
            for index in sorted(running):
                proc = self.procs[index]
                if proc.poll() is None:
                    continue
                running.discard(index)
                mark_worker_dead(proc.pid, metrics_dir)
                if self.stopping_since is None:
                    log.error("worker exited unexpectedly", pid=proc.pid, code=proc.returncode)
                    self.failed = True
                    self._stop_all()
            if self.stopping_since is not None and time.monotonic() - self.stopping_since > bound:
                for index in running:
                    log.error("worker did not stop in time; killed", pid=self.procs[index].pid)
                    self.procs[index].kill()
                    self.failed = True
                bound = float("inf")  # killed once; the loop now only reaps them
