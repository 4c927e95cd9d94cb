"""A connection of its own for readiness checks, outside the pool.

/ready must tell whether the database answers, not whether a pooled connection is free:
with every pooled connection busy (a burst, writers queued on a locked row) a check that
waited for one would report the process unready and the balancer would take away even
the requests it could serve. Checks share the one connection, one at a time; one that
does not finish within the bound fails, and a failed check's connection is dropped and
opened afresh by the next check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

T = TypeVar("T")
Connector = Callable[[], Awaitable[asyncpg.Connection]]


class Probe:
    def __init__(self, connector: Connector, timeout_seconds: float) -> None:
        self._connector = connector
        self.timeout_seconds = timeout_seconds
        self._conn: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()

    async def run(self, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """fn(conn) on the probe's connection within the bound (TimeoutError past it)."""
        async with asyncio.timeout(self.timeout_seconds), self._lock:
            try:
                if self._conn is None or self._conn.is_closed():
                    self._conn = await self._connector()
                return await fn(self._conn)
            except BaseException:
                self._drop()
                raise

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.terminate()

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None and not conn.is_closed():
                try:
                    await asyncio.wait_for(conn.close(), self.timeout_seconds)
                except Exception:
                    conn.terminate()
