"""The dedicated connection that LISTENs for key and role changes (migration 0006's
triggers) and drops cached lookups, so a change made by any process reaches every
process within a second. The same connection listens for tenant data changes (migration
0020's triggers) and hands each announcement to the read cache
(service/caches/read_cache.py), which drops what it names.

The connection is watched: a termination callback notices a closed socket at once and
a ping every few seconds notices a silent one. While it is down the key cache is off
(every request looks its key up) and the listener reconnects with a growing pause.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from uuid import UUID

import asyncpg

from service.caches.key_cache import KeyCache
from service.caches.read_cache import ReadCache
from service.observability.logs import get_logger

log = get_logger("service.auth.listener")
CHANNEL = "tenant_service_api_keys"
TENANT_DATA_CHANNEL = "tenant_service_tenant_data"
PING_SECONDS = 5.0
PING_TIMEOUT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_PAUSE_SECONDS = 5.0

Ping = Callable[[asyncpg.Connection], Awaitable[object]]


class KeyChangeListener:
    def __init__(
        self, dsn: str, cache: KeyCache, ping: Ping, reads: ReadCache | None = None
    ) -> None:
        self.dsn = dsn
        self.cache = cache
        self.reads = reads
        self.ping = ping
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None

    async def start(self, *, wait_seconds: float = CONNECT_TIMEOUT_SECONDS) -> None:
        """Start listening; wait briefly for the first connection (the service also
        starts without it, with the cache off until the listener connects)."""
        self._task = asyncio.create_task(self._run(), name="api-key-change-listener")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.connected.wait(), wait_seconds)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._close()
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

    async def _run(self) -> None:
        pause = 0.1
        outage_logged = False
        while True:
            lost = asyncio.Event()
            try:
                await self._connect(lost)
            except Exception as exc:  # any failure to listen: retry, the cache stays off
                if not outage_logged:
                    log.warning(
                        "key cache off: cannot listen for key changes; keys are looked up "
                        "on every request until the listener reconnects",
                        error=type(exc).__name__,
                    )
                    outage_logged = True
                await asyncio.sleep(pause)
                pause = min(MAX_PAUSE_SECONDS, pause * 2)
                continue
            if outage_logged:
                log.warning("key cache on again: listening for key changes")
                outage_logged = False
            pause = 0.1
            self.cache.enable()
            if self.reads is not None:
                self.reads.enable()
            self.connected.set()
            try:
                await self._watch(lost)
            finally:
                self._disable_caches()
                self.connected.clear()
                await self._close()
            log.warning("key cache off: the listener connection was lost; reconnecting")
            outage_logged = True

    async def _connect(self, lost: asyncio.Event) -> None:
        conn: asyncpg.Connection = await asyncpg.connect(
            self.dsn,
            timeout=CONNECT_TIMEOUT_SECONDS,
            server_settings={"application_name": "tenant-service-listener"},
        )
        try:
            await conn.add_listener(CHANNEL, self._notified)
            if self.reads is not None:
                await conn.add_listener(TENANT_DATA_CHANNEL, self._data_changed)
        except BaseException:
            await conn.close()
            raise
        conn.add_termination_listener(lambda _conn: lost.set())
        self._conn = conn

    async def _watch(self, lost: asyncio.Event) -> None:
        conn = self._conn
        assert conn is not None
        while not lost.is_set():
            try:
                await asyncio.wait_for(lost.wait(), PING_SECONDS)
            except TimeoutError:
                pass  # quiet for a while: check that the connection still answers
            else:
                return
            try:
                await asyncio.wait_for(self.ping(conn), PING_TIMEOUT_SECONDS)
            except Exception:  # whatever the failure, a fresh connection is the cure
                return

    def _notified(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        self.on_notification(str(payload))

    def _data_changed(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        if self.reads is not None:
            self.reads.announced(str(payload))

    def _disable_caches(self) -> None:
        self.cache.disable()
        if self.reads is not None:
            self.reads.disable()

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), 2.0)
            if not conn.is_closed():
                conn.terminate()
