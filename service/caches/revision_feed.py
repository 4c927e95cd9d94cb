"""The newest committed revision, as this process has heard it: a LISTEN on
tenant_service_revisions (migration 0033 notifies each revision at its commit) wakes
every stream of context changes waiting in this process, which then reads the log
itself. Nothing is lost while the connection is down: a stream also reads the log
after each heartbeat, and a reconnect wakes every stream once. The connection is kept
and watched as the key listener's is (service/db/listening.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import asyncpg

from service.db.listening import (
    CONNECT_TIMEOUT_SECONDS,
    PING_SECONDS,
    ListeningConnection,
    Ping,
)
from service.observability.logs import get_logger

log = get_logger("service.caches.revision_feed")
CHANNEL = "tenant_service_revisions"


class RevisionFeed(ListeningConnection):
    def __init__(self, current: Callable[[asyncpg.Connection], Awaitable[int]], ping: Ping) -> None:
        super().__init__(
            task_name="revision-feed",
            application_name="tenant-service-revisions",
            ping=ping,
            ping_timeout=PING_SECONDS,
            channels={CHANNEL: self._notified},
        )
        self.current = current
        self.latest = 0
        self._changed = asyncio.Event()
        self._current_on_connect = 0

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
        await self._start(dsn, wait_seconds)

    async def _came_up(self, conn: asyncpg.Connection) -> None:
        self._current_on_connect = await self.current(conn)

    def _failed(self, exc: Exception) -> None:
        log.warning("cannot listen for revisions; streams poll", error=type(exc).__name__)

    def _up(self) -> None:
        self.heard(self._current_on_connect)  # what was committed while nobody listened

    def _notified(self, payload: str) -> None:
        try:
            revision = int(payload)
        except ValueError:
            revision = self.latest
        self.heard(revision)
