"""One service process: listen, serve, and on SIGTERM or SIGINT stop gracefully.

The port is bound first, before migrations and the pool: a port that is taken stops the
start at once with PortUnavailable (the command line prints one line). In development
the first admin key is made only once the service listens, so a failed start never
spends it.

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
import errno
import gc
import os
import signal
import socket

from aiohttp import web

from service.app import create_app
from service.bootstrap import bootstrap_admin_key, show_key_once
from service.http.appkeys import DATABASE, QUERIES
from service.http.deadlines import TimedSite
from service.observability import tracing
from service.observability.logs import get_logger
from service.observability.metrics_listener import start_metrics_listener
from service.settings.options import Settings

YOUNG_COLLECTION_THRESHOLD = 50_000
log = get_logger("service.server")
PARENT_POLL_SECONDS = 0.5
LISTEN_BACKLOG = 128  # aiohttp's default


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency off Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class PortUnavailable(Exception):
    """The listening address cannot be bound; str() is one line for a person."""

    def __init__(self, host: str, port: int, error: OSError) -> None:
        if error.errno == errno.EADDRINUSE:
            reason = "the port is already in use (another process listens on it)"
        elif error.errno == errno.EACCES:
            reason = "permission denied (ports below 1024 need privileges)"
        elif error.errno == errno.EADDRNOTAVAIL:
            reason = "this machine has no such address"
        else:
            reason = error.strerror or type(error).__name__
        super().__init__(
            f"cannot listen on {host}:{port}: {reason}; "
            "choose another port with PORT=<port> or --port <port>"
        )


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A socket bound to host:port, not yet listening (the site listens on it later)."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise PortUnavailable(host, port, OSError(errno.EADDRNOTAVAIL, str(exc))) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise PortUnavailable(host, port, exc) from None
    sock.setblocking(False)
    return sock


def check_port(settings: Settings, *, reuse_port: bool = False) -> None:
    """Fail early (before an embedded database starts) when the port is taken."""
    bind(settings.host, settings.port, reuse_port=reuse_port).close()


def serve(settings: Settings, *, reuse_port: bool = False, parent_pid: int | None = None) -> None:
    """Run the service until a signal (or, for a worker, until its parent is gone).
    Raises PortUnavailable when the address cannot be bound."""
    sock = bind(settings.host, settings.port, reuse_port=reuse_port)
    tracing.configure()  # each worker process its own exporter (threads do not fork)
    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(_serve(settings, sock, reuse_port, parent_pid))
    finally:
        sock.close()
        tracing.shutdown()
        # Whatever is left (a task nobody awaited) is cancelled, not destroyed pending.
        leftover = asyncio.all_tasks(loop)
        for task in leftover:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        asyncio.set_event_loop(None)
        loop.close()


async def _serve(
    settings: Settings, sock: socket.socket, reuse_port: bool, parent_pid: int | None
) -> None:
    app = create_app(settings)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=settings.shutdown_timeout_seconds,
    )
    metrics: web.AppRunner | None = None
    stop = _StopSignal(parent_pid)
    stop.install()
    try:
        await runner.setup()  # migrations, the pool, the key listener
        try:
            # Listening from here: connections queue in the backlog and are answered
            # once the site starts, just below. The development key is made now, so it
            # is shown before the first answer and never by a start that could not bind.
            sock.listen(LISTEN_BACKLOG)
            port = int(sock.getsockname()[1])
            issued = await bootstrap_admin_key(app[DATABASE], settings, app[QUERIES])
            site = TimedSite(
                runner,
                settings.host,
                port,
                header_timeout=settings.header_timeout_seconds,
                body_timeout=settings.body_timeout_seconds,
                reuse_port=reuse_port,
                sock=sock,
            )
            await site.start()
            # What start-up made (routes, the OpenAPI document, the pool) lives as long as
            # the process: frozen, the collector stops walking it on every full collection,
            # which cost a cached read about a twentieth of its time.
            gc.collect()
            gc.freeze()
            # A request makes a few hundred container objects and nearly all of them die
            # by reference counting; at the default threshold (700) a young collection
            # ran every few requests, about 8% of a cached read's time. Cycles are still
            # collected, every YOUNG_COLLECTION_THRESHOLD allocations.
            gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, 20, 10)
            metrics = await start_metrics_listener(app, settings, reuse_port=reuse_port)
            log.info(
                "service started",
                host=settings.host,
                port=port,
                environment=settings.environment,
                reuse_port=reuse_port,
                metrics_port=settings.metrics_port or None,
            )
            if issued is not None:
                show_key_once(issued, settings.data_dir, port)
            reason = await stop.wait()
            log.info(
                "service stopping",
                reason=reason,
                shutdown_timeout_seconds=settings.shutdown_timeout_seconds,
            )
        finally:
            if metrics is not None:
                await metrics.cleanup()
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
