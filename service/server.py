"""One service process: listen, serve, and on SIGTERM or SIGINT stop gracefully.

Stopping goes in this order (aiohttp's runner does steps 2 to 5):
1. the signal is logged ("service stopping");
2. the listening socket closes: new connections are refused (another worker, or another
   replica behind the load balancer, takes them);
3. idle keep-alive connections close and STOPPING is set (background workers such as
   webhook deliveries take on nothing new);
4. in-flight requests get SHUTDOWN_TIMEOUT_SECONDS to finish, then are cancelled;
5. the cleanup contexts run in reverse: workers stop, pending key usage is written, the
   pool closes.
The caller then stops an embedded PostgreSQL, if it started one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from aiohttp import web

from service.app import create_app
from service.config import Settings
from service.logs import get_logger

log = get_logger("service.server")
PARENT_POLL_SECONDS = 0.5


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def serve(settings: Settings, *, reuse_port: bool = False, parent_pid: int | None = None) -> None:
    """Run the service until a signal (or, for a worker, until its parent is gone)."""
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(_serve(settings, reuse_port, parent_pid))
    finally:
        # Whatever is left (a task nobody awaited) is cancelled, not destroyed pending.
        leftover = asyncio.all_tasks(loop)
        for task in leftover:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        asyncio.set_event_loop(None)
        loop.close()


async def _serve(settings: Settings, reuse_port: bool, parent_pid: int | None) -> None:
    app = create_app(settings, bootstrap_key=True)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=settings.shutdown_timeout_seconds,
    )
    stop = _StopSignal(parent_pid)
    stop.install()
    try:
        await runner.setup()  # migrations, the pool, the key listener
        try:
            site = web.TCPSite(runner, settings.host, settings.port, reuse_port=reuse_port)
            await site.start()
            log.info(
                "service started",
                host=settings.host,
                port=settings.port,
                environment=settings.environment,
                reuse_port=reuse_port,
            )
            reason = await stop.wait()
            log.info(
                "service stopping",
                reason=reason,
                shutdown_timeout_seconds=settings.shutdown_timeout_seconds,
            )
        finally:
            await runner.cleanup()
    finally:
        stop.remove()


class _StopSignal:
    """SIGTERM, SIGINT, or (for a worker) its parent's exit: whichever comes first."""

    def __init__(self, parent_pid: int | None) -> None:
        self.parent_pid = parent_pid
        self.event = asyncio.Event()
        self.reason = ""
        self._watch: asyncio.Task[None] | None = None

    def _set(self, reason: str) -> None:
        if not self.event.is_set():
            self.reason = reason
            self.event.set()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._set, sig.name)
        if self.parent_pid is not None:
            self._watch = asyncio.create_task(self._watch_parent(self.parent_pid))

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        if self._watch is not None:
            self._watch.cancel()

    async def _watch_parent(self, parent_pid: int) -> None:
        # A worker whose parent died (SIGKILL, OOM) must not serve on, unsupervised.
        with contextlib.suppress(asyncio.CancelledError):
            # Nothing signals a parent's death (without prctl), so it is polled.
            while os.getppid() == parent_pid:  # noqa: ASYNC110
                await asyncio.sleep(PARENT_POLL_SECONDS)
            self._set("parent exited")

    async def wait(self) -> str:
        await self.event.wait()
        return self.reason
