"""The dedicated connection that LISTENs for key and role changes (migration 0006's
triggers) and drops cached lookups, so a change made by any process reaches every
process within a second. The same connection listens for tenant data changes (migration
0020's triggers) and hands each announcement to the read cache
(service/caches/read_cache.py), which drops what it names, and hears each revision's
commit after those announcements, so the read cache knows a revision its entries
reflect at least (docs/decisions/revisions.md).

The connection is watched (service/db/listening.py): a termination callback notices a
closed socket at once and a ping every few seconds notices a silent one. While it is
down the key cache is off (every request looks its key up) and the listener reconnects
with a growing pause.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.caches.key_cache import KeyCache
from service.caches.read_cache import ReadCache
from service.db.listening import CONNECT_TIMEOUT_SECONDS, ListeningConnection, Ping
from service.observability.logs import get_logger

log = get_logger("service.auth.listener")
CHANNEL = "tenant_service_api_keys"
TENANT_DATA_CHANNEL = "tenant_service_tenant_data"
# Revisions are heard here too, after the announcements of their commits (one connection
# delivers in commit order), so the read cache knows a revision its entries reflect.
REVISIONS_CHANNEL = "tenant_service_revisions"
PING_TIMEOUT_SECONDS = 2.0


class KeyChangeListener(ListeningConnection):
    def __init__(
        self, dsn: str, cache: KeyCache, ping: Ping, reads: ReadCache | None = None
    ) -> None:
        super().__init__(
            task_name="api-key-change-listener",
            application_name="tenant-service-listener",
            ping=ping,
            ping_timeout=PING_TIMEOUT_SECONDS,
            channels={CHANNEL: self.on_notification}
            if reads is None
            else {
                CHANNEL: self.on_notification,
                TENANT_DATA_CHANNEL: reads.announced,
                REVISIONS_CHANNEL: reads.revised,
            },
        )
        self.dsn = dsn
        self.cache = cache
        self.reads = reads
        self._outage_logged = False

    async def start(self, *, wait_seconds: float = CONNECT_TIMEOUT_SECONDS) -> None:
        """Start listening; wait briefly for the first connection (the service also
        starts without it, with the cache off until the listener connects)."""
        self._outage_logged = False
        await self._start(self.dsn, wait_seconds)

    async def stop(self) -> None:
        await super().stop()
        self._disable_caches()

    def on_notification(self, payload: str) -> None:
        kind, _, raw_id = payload.partition(":")
        try:
            target = UUID(raw_id)
        except ValueError:
            target = None
        if kind == "key" and target is not None:
            self.cache.invalidate_key(target)
        elif kind == "role" and target is not None:
            self.cache.invalidate_role(target)
        else:  # unknown announcement: the safe answer is to forget everything
            self.cache.clear()

    async def _came_up(self, conn: asyncpg.Connection) -> None:
        if self.reads is not None:
            await self.reads.listening(conn)

    def _failed(self, exc: Exception) -> None:
        # The cache stays off; one line per outage.
        if not self._outage_logged:
            log.warning(
                "key cache off: cannot listen for key changes; keys are looked up "
                "on every request until the listener reconnects",
                error=type(exc).__name__,
            )
            self._outage_logged = True

    def _up(self) -> None:
        if self._outage_logged:
            log.warning("key cache on again: listening for key changes")
            self._outage_logged = False
        self.cache.enable()
        if self.reads is not None:
            self.reads.enable()

    def _down(self) -> None:
        self._disable_caches()

    def _lost(self) -> None:
        log.warning("key cache off: the listener connection was lost; reconnecting")
        self._outage_logged = True

    def _disable_caches(self) -> None:
        self.cache.disable()
        if self.reads is not None:
            self.reads.disable()
