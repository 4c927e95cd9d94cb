"""Readiness checks."""

from __future__ import annotations

import asyncpg

from service.db.repository import NamedSql, Repository


class HealthRepository(Repository):
    _ping = NamedSql("ping_database")

    async def ping(self, conn: asyncpg.Connection) -> bool:
        return bool(await self._ping.value(conn))
