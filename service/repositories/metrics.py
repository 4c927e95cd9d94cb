"""Database figures for /metrics."""

from __future__ import annotations

import asyncpg

from service.db.repository import NamedSql, Repository


class MetricsRepository(Repository):
    _deliveries = NamedSql("count_deliveries_by_status")

    async def count_deliveries_by_status(self, conn: asyncpg.Connection) -> dict[str, int]:
        rows = await self._deliveries.many(conn)
        return {str(r["status"]): int(r["deliveries"]) for r in rows}
