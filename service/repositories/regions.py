"""Tenants' data-residency regions."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


class RegionsRepository(Repository):
    _migrate = NamedSql("migrate_tenant_regions")

    async def migrate_tenant_regions(
        self, conn: asyncpg.Connection, tenant_id: UUID, region: str, *, include_descendants: bool
    ) -> list[UUID]:
        """Set the region on the tenant (and its subtree); the ids that changed."""
        rows = await self._migrate.many(
            conn, tenant_id=tenant_id, region=region, include_descendants=include_descendants
        )
        return [r["id"] for r in rows]
