"""The newest committed revision, as this process has heard it: a LISTEN on
tenant_service_revisions (migration 0033 notifies each revision at its commit) wakes
every stream of context changes waiting in this process, which then reads the log
itself. Nothing is lost while the connection is down: a stream also reads the log
after each heartbeat, and a reconnect wakes every stream once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import asyncpg

from service.observability.logs import get_logger

log = get_logger("service.caches.revision_feed")
CHANNEL = "tenant_service_revisions"
CONNECT_TIMEOUT_SECONDS = 5.0
PING_SECONDS = 5.0
MAX_PAUSE_SECONDS = 5.0

Read = Callable[[asyncpg.Connection], Awaitable[object]]


class RevisionFeed:
    def __init__(self, current: Callable[[asyncpg.Connection], Awaitable[int]], ping: Read) -> None:
        self.current = current
        self.ping = ping
        self.latest = 0
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None
        self.connected = asyncio.Event()

    def heard(self, revision: int) -> None:
        """A revision committed: wake every waiter (also for one not newer, after a
        reconnect, so that streams read what they may have missed)."""
        self.latest = max(self.latest, revision)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_past(self, revision: int, seconds: float) -> None:
        """Return once a revision after `revision` was heard, or after `seconds`."""
        if self.latest > revision:
            return
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await changed.wait()

    async def start(self, dsn: str, *, wait_seconds: float = CONNECT_TIMEOUT_SECONDS) -> None:
        self._task = asyncio.create_task(self._run(dsn), name="revision-feed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.connected.wait(), wait_seconds)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._close()

    async def _run(self, dsn: str) -> None:
        pause = 0.1
        while True:
            lost = asyncio.Event()
            try:
                conn: asyncpg.Connection = await asyncpg.connect(
                    dsn,
                    timeout=CONNECT_TIMEOUT_SECONDS,
                    server_settings={"application_name": "tenant-service-revisions"},
                )
                self._conn = conn
                await conn.add_listener(CHANNEL, self._notified)
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                current = await self.current(conn)
            except Exception as exc:
                log.warning("cannot listen for revisions; streams poll", error=type(exc).__name__)
                await self._close()
                await asyncio.sleep(pause)
                pause = min(MAX_PAUSE_SECONDS, pause * 2)
                continue
            pause = 0.1
            self.connected.set()
            self.heard(current)  # what was committed while nobody listened
            try:
                await self._watch(conn, lost)
            finally:
                self.connected.clear()
                await self._close()

    async def _watch(self, conn: asyncpg.Connection, lost: asyncio.Event) -> None:
        while not lost.is_set():
            try:
                await asyncio.wait_for(lost.wait(), PING_SECONDS)
            except TimeoutError:
                pass
            else:
                return
            try:
                await asyncio.wait_for(self.ping(conn), PING_SECONDS)
            except Exception:
                return

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        try:
            revision = int(str(payload))
        except ValueError:
            revision = self.latest
        self.heard(revision)

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2.0)
            if not conn.is_closed():
                conn.terminate()
