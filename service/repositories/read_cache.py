"""Markers on the tenant data channel (read-your-writes for the read cache)."""

from __future__ import annotations

import asyncpg

from service.db.repository import NamedSql, Repository


class ReadCacheRepository(Repository):
    _announce_marker = NamedSql("announce_marker")

    async def announce_marker(self, conn: asyncpg.Connection, token: str) -> int:
        """Send the marker; the primary's WAL position as it was sent."""
        return int(await self._announce_marker.value(conn, token=token))
