"""Protected subtrees (migration 0042)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class Protection:
    tenant_id: UUID
    protected_at: datetime
    protected_by: str


class ProtectionRepository(Repository):
    _find = NamedSql("find_protecting_tenant")
    _get = NamedSql("get_protection")
    _insert = NamedSql("insert_protection")
    _delete = NamedSql("delete_protection")

    async def find_protecting_tenant(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> UUID | None:
        """The nearest protected tenant at or above any of these tenants."""
        found: UUID | None = await self._find.value(conn, tenant_ids=list(tenant_ids))
        return found

    async def get_protection(self, conn: asyncpg.Connection, tenant_id: UUID) -> Protection | None:
        return await self._get.one_as(Protection, conn, tenant_id=tenant_id)

    async def insert_protection(
        self, conn: asyncpg.Connection, tenant_id: UUID, protected_by: str
    ) -> Protection | None:
        return await self._insert.one_as(
            Protection, conn, tenant_id=tenant_id, protected_by=protected_by
        )

    async def delete_protection(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> Protection | None:
        return await self._delete.one_as(Protection, conn, tenant_id=tenant_id)
