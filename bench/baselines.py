"""The two baselines the service's figures are divided by, in the service's process model.

B_http (`GET /http`): aiohttp + uvloop + orjson answering a fixed small object, the
floor of any answer. B_db (`GET /db/{id}`): the same plus one primary-key read through an
asyncpg pool built by the service's own create_pool, the floor of any database answer.
Neither has the service's middlewares (auth, request ids, rate limits): what the service
costs above these floors is what the benchmarks measure.

Run as `python -m bench.baselines --port PORT --dsn DSN [--pool-size N]`; it listens on
127.0.0.1 only, prints "ready" once listening and stops cleanly on SIGTERM or SIGINT.
`start_baseline_server()` does that from an orchestrator.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any

import asyncpg
from aiohttp import web

from bench.sqlfiles import bench_queries
from service.base.timefmt import iso, iso_or_none
from service.db.pool import create_pool
from service.db.queries import Query
from service.http.responses import json_response
from service.server import new_event_loop
from service.settings.options import Settings

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
READY_LINE = "ready"
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
# Fixed, so every B_http answer is byte-identical and costs the same to encode.
HTTP_BASELINE_ID = "0190a6c4-3b1e-7c2d-9a4f-5e6b7c8d9e0f"
# The service keeps a shutdown grace for in-flight requests; a baseline has nothing worth
# waiting for beyond a load run's last answers.
SHUTDOWN_TIMEOUT_S = 5.0

POOL_KEY = web.AppKey("pool", asyncpg.Pool)
SQL_KEY = web.AppKey("get_tenant_row", Query)


def baseline_settings(pool_size: int) -> Settings:
    """The service's default pool settings with its size set to pool_size (the minimum
    kept at the service's default unless the pool is smaller)."""
    defaults = Settings()
    return replace(
        defaults,
        db_pool_max_size=pool_size,
        db_pool_min_size=min(defaults.db_pool_min_size, pool_size),
    )


def tenant_row_json(row: asyncpg.Record) -> dict[str, Any]:
    # Same wire forms as service/representations.py (ids as text, UTC "Z" timestamps):
    # orjson refuses asyncpg's UUID subclass, and the encoding work should match.
    return {
        "id": str(row["id"]),
        "parent_id": None if row["parent_id"] is None else str(row["parent_id"]),
        "name": row["name"],
        "slug": row["slug"],
        "ancestry_path": row["ancestry_path"],
        "depth": row["depth"],
        "metadata": row["metadata"],
        "isolation_strategy": row["isolation_strategy"],
        "region": row["region"],
        "status": row["status"],
        "deleted_at": iso_or_none(row["deleted_at"]),
        "created_at": iso(row["created_at"]),
        "updated_at": iso(row["updated_at"]),
    }


async def http_baseline(request: web.Request) -> web.Response:
    return json_response({"ok": True, "id": HTTP_BASELINE_ID})


async def db_baseline(request: web.Request) -> web.Response:
    try:
        tenant_id = uuid.UUID(request.match_info["id"])
    except ValueError:
        return json_response({"error": "not found"}, status=404)
    pool = request.app[POOL_KEY]
    row = await request.app[SQL_KEY].one(pool, tenant_id=tenant_id)
    if row is None:
        return json_response({"error": "not found"}, status=404)
    return json_response(tenant_row_json(row))


def create_baseline_app(dsn: str, pool_size: int) -> web.Application:
    app = web.Application()
    app[SQL_KEY] = bench_queries()["get_tenant_row"]

    async def pool_context(app: web.Application) -> AsyncIterator[None]:
        pool = await create_pool(baseline_settings(pool_size), dsn)
        app[POOL_KEY] = pool
        try:
            yield
        finally:
            await pool.close()

    app.cleanup_ctx.append(pool_context)
    app.router.add_get("/http", http_baseline)
    app.router.add_get("/db/{id}", db_baseline)
    return app


async def serve_baseline(dsn: str, port: int, pool_size: int) -> None:
    """Serve until SIGTERM or SIGINT; "ready" goes to stdout once the port listens."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    # As service/server.py runs it: no access log, signals handled here.
    runner = web.AppRunner(
        create_baseline_app(dsn, pool_size),
        handle_signals=False,
        access_log=None,
        shutdown_timeout=SHUTDOWN_TIMEOUT_S,
    )
    try:
        await runner.setup()
        try:
            await web.TCPSite(runner, HOST, port).start()
            print(READY_LINE, flush=True)
            await stop.wait()
        finally:
            await runner.cleanup()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


@dataclass
class BaselineProcess:
    """A running `python -m bench.baselines`; stop() (or leaving `async with`) ends it."""

    process: asyncio.subprocess.Process
    port: int

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def stop(self) -> int:
        """SIGTERM, then SIGKILL if it has not exited within STOP_TIMEOUT_S; its exit code."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.process.kill()
                await self.process.wait()
        assert self.process.returncode is not None
        return self.process.returncode

    async def __aenter__(self) -> BaselineProcess:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


async def start_baseline_server(dsn: str, port: int, pool_size: int) -> BaselineProcess:
    """Start the baseline server as a subprocess and wait (READY_TIMEOUT_S) for "ready"."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.baselines",
        "--port",
        str(port),
        "--dsn",
        dsn,
        "--pool-size",
        str(pool_size),
        cwd=REPO_ROOT,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        # stderr is inherited: a failing start explains itself where the caller looks.
    )
    baseline = BaselineProcess(process, port)
    try:
        await asyncio.wait_for(_wait_ready(process), READY_TIMEOUT_S)
    except BaseException:
        await baseline.stop()
        raise
    return baseline


async def _wait_ready(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    while True:
        line = await process.stdout.readline()
        if not line:
            code = await process.wait()
            raise RuntimeError(f"the baseline server exited with {code} before it was ready")
        if line.decode().strip() == READY_LINE:
            return


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.baselines", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dsn", required=True, help="PostgreSQL DSN for the B_db baseline")
    parser.add_argument("--pool-size", type=int, default=Settings().db_pool_max_size)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(serve_baseline(args.dsn, args.port, args.pool_size))


if __name__ == "__main__":
    main()
