"""Where a benchmark runs: a PostgreSQL server, fresh databases on it, and the service.

Without --database-url the suite starts the embedded PostgreSQL (the one `make run` uses)
under its own data directory, reached over its Unix socket like the service's default.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg

from bench.sqlfiles import bench_queries


def free_port() -> int:
    """A free TCP port on the loopback address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def with_database(dsn: str, database: str) -> str:
    """The same server and options, another database."""
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path=f"/{database}"))


class PostgresServer(AbstractContextManager["PostgresServer"]):
    """A server to create benchmark databases on: the given URL's, or an embedded one."""

    def __init__(self, database_url: str | None, data_dir: Path) -> None:
        self._url = database_url
        self._data_dir = data_dir
        self._embedded: object | None = None
        self.admin_dsn = ""
        self.kind = "external"

    def __enter__(self) -> PostgresServer:
        if self._url is not None:
            self.admin_dsn = self._url
            return self
        from service.embedded import EmbeddedPostgres

        embedded = EmbeddedPostgres.start(self._data_dir)
        if asyncio.run(_size_shared_buffers(embedded.dsn)):
            embedded.stop()  # shared_buffers takes effect at the next start
            embedded = EmbeddedPostgres.start(self._data_dir)
        self._embedded = embedded
        self.admin_dsn = embedded.dsn
        self.kind = "embedded"
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._embedded is not None:
            from service.embedded import EmbeddedPostgres

            assert isinstance(self._embedded, EmbeddedPostgres)
            self._embedded.stop()

    async def fresh_database(self, name: str) -> str:
        """Drop and create database `name`; its DSN."""
        queries = bench_queries()
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            # Identifiers cannot be bound as parameters; the query quotes the name.
            ddl = await queries["database_ddl"].one(conn, database_name=name)
            assert ddl is not None
            drop, create = ddl["drop_ddl"], ddl["create_ddl"]
            await conn.execute(drop)
            await conn.execute(create)
        finally:
            await conn.close()
        return with_database(self.admin_dsn, name)

    async def server_version(self) -> str:
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            version: str = await bench_queries()["server_version"].value(conn)
        finally:
            await conn.close()
        return version


def shared_buffers_mb() -> int:
    """A quarter of the memory, at most 2 GB: the usual production sizing, where the
    embedded server's development default (128 MB) would hold a tenth of a million
    tenants' working set."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 1024
    return max(128, min(2048, pages * page_size // 4 // 2**20))


async def _size_shared_buffers(dsn: str) -> bool:
    """Set shared_buffers on the embedded server; whether it needs a restart."""
    conn = await asyncpg.connect(dsn)
    try:
        queries = bench_queries()
        wanted = f"{shared_buffers_mb()}MB"
        if await queries["shared_buffers_mb"].value(conn) == shared_buffers_mb():
            return False
        ddl = await queries["shared_buffers_ddl"].value(conn, shared_buffers=wanted)
        await conn.execute(ddl)
        return True
    finally:
        await conn.close()


def service_env(dsn: str, data_dir: Path, pool_size: int) -> dict[str, str]:
    """The service's environment for a benchmark: development secrets from data_dir,
    logs at the service's default level (info: every request writes its access line, to
    /dev/null here), and a rate limit no benchmark reaches (the limiter still runs)."""
    return {
        **os.environ,
        "DATABASE_URL": dsn,
        "DATA_DIR": str(data_dir),
        "SERVICE_ENV": "development",
        "LOG_LEVEL": "info",
        "RATE_LIMIT_MAX": "100000",
        "RATE_LIMIT_WINDOW": "1s",
        "DB_POOL_MIN_SIZE": str(pool_size),
        "DB_POOL_MAX_SIZE": str(pool_size),
    }


async def run_cli(env: dict[str, str], *args: str) -> str:
    """Run `tenant-service ARGS` (migrate, api-keys create); its stdout."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "service",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"tenant-service {' '.join(args)} failed: {err.decode()[-2000:]}")
    return out.decode()


class ServiceProcess:
    """One `tenant-service serve` process on 127.0.0.1:port."""

    def __init__(self, env: dict[str, str], port: int) -> None:
        self._env = env
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self._process: asyncio.subprocess.Process | None = None

    async def start(self, wait_s: float = 60.0) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "service",
            "serve",
            "--port",
            str(self.port),
            env={**self._env, "HOST": "127.0.0.1"},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        deadline = asyncio.get_running_loop().time() + wait_s
        async with aiohttp.ClientSession() as session:
            while True:
                if self._process.returncode is not None:
                    raise RuntimeError("the service exited while starting")
                try:
                    async with session.get(f"{self.base_url}/ready") as answer:
                        if answer.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
                if asyncio.get_running_loop().time() > deadline:
                    raise RuntimeError("the service did not become ready in time")
                await asyncio.sleep(0.2)

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid
