"""A tenant's own permission policies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql
from service.repositories.entries import EntryRepository, holders
from service.repositories.key_locks import KeyWrite


@dataclass(frozen=True, slots=True)
class PermissionPolicyRow:
    tenant_id: UUID
    key: str
    value: bool
    mode: str
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


class PermissionsRepository(EntryRepository):
    lock_space = "permission_policies"
    _list = NamedSql("list_permission_policies")
    _get = NamedSql("get_permission_policy")
    _locked = NamedSql("find_locked_permission_keys")
    _upsert = NamedSql("upsert_permission_policy")
    _delete = NamedSql("delete_permission_policy")
    _expire = NamedSql("delete_expired_permission_policies")

    async def delete_expired_permission_policies(
        self, conn: asyncpg.Connection, batch_size: int
    ) -> list[PermissionPolicyRow]:
        """Remove due policies that no other transaction holds; returns them."""
        return await self._expire.many_as(PermissionPolicyRow, conn, batch_size=batch_size)

    async def list_permission_policies(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> list[PermissionPolicyRow]:
        return await self._list.many_as(PermissionPolicyRow, conn, tenant_id=tenant_id)

    async def get_permission_policy(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> PermissionPolicyRow | None:
        return await self._get.one_as(PermissionPolicyRow, conn, tenant_id=tenant_id, key=key)

    async def find_locked_permission_keys(
        self, conn: asyncpg.Connection, tenant_id: UUID, keys: Sequence[str]
    ) -> dict[str, UUID]:
        """Keys a LOCKED policy holds at tenant_id or above it, mapped to the holder."""
        if not keys:
            return {}
        return holders(await self._locked.many(conn, tenant_id=tenant_id, keys=list(keys)))

    async def upsert_permission_policy(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        key: str,
        *,
        value: bool,
        mode: str,
        expires_at: datetime | None = None,
    ) -> PermissionPolicyRow:
        row = await self._upsert.one(
            conn, tenant_id=tenant_id, key=key, value=value, mode=mode, expires_at=expires_at
        )
        assert row is not None
        return PermissionPolicyRow(**row)

    async def delete_permission_policy(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> PermissionPolicyRow | None:
        return await self._delete.one_as(PermissionPolicyRow, conn, tenant_id=tenant_id, key=key)

    async def lock_permission_keys(
        self, conn: asyncpg.Connection, writes: Sequence[KeyWrite]
    ) -> None:
        await self._lock(conn, writes)
