"""Markers on the tenant data channel (read-your-writes for the read cache)."""

from __future__ import annotations

import asyncpg

from service.db.repository import NamedSql, Repository


class ReadCacheRepository(Repository):
    _announce_marker = NamedSql("announce_marker")

    async def announce_marker(self, conn: asyncpg.Connection, token: str) -> tuple[int, int]:
        """Send the marker; the primary's WAL position and the newest revision as it
        was sent."""
        row = await self._announce_marker.one(conn, token=token)
        assert row is not None  # one row, always
        return int(row["position"]), int(row["revision"])
