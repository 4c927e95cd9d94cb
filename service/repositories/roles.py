"""Roles: named bundles of scopes, global or owned by a tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class RoleRow:
    id: UUID
    tenant_id: UUID | None
    name: str
    description: str
    scopes: list[str]
    created_at: datetime
    updated_at: datetime
    # The owning tenant's ancestry path (None for a global role), for subtree checks.
    tenant_path: str | None


@dataclass(frozen=True, slots=True)
class NewRole:
    id: UUID
    tenant_id: UUID | None
    name: str
    description: str
    scopes: list[str]


class RolesRepository(Repository):
    _insert = NamedSql("insert_role")
    _get = NamedSql("get_role")
    _lock = NamedSql("lock_role")
    _list = NamedSql("list_roles")
    _update = NamedSql("update_role")
    _delete = NamedSql("delete_role")

    async def insert_role(self, conn: asyncpg.Connection, role: NewRole) -> None:
        await self._insert.exec(
            conn,
            role_id=role.id,
            tenant_id=role.tenant_id,
            name=role.name,
            description=role.description,
            scopes=role.scopes,
        )

    async def get_role(self, conn: asyncpg.Connection, role_id: UUID) -> RoleRow | None:
        return await self._get.one_as(RoleRow, conn, role_id=role_id)

    async def lock_role(self, conn: asyncpg.Connection, role_id: UUID) -> RoleRow | None:
        return await self._lock.one_as(RoleRow, conn, role_id=role_id)

    async def list_roles(
        self, conn: asyncpg.Connection, *, tenant_id: UUID | None, subtree_of: UUID | None
    ) -> list[RoleRow]:
        return [
            RoleRow(**r)
            for r in await self._list.many(conn, tenant_id=tenant_id, subtree_root_id=subtree_of)
        ]

    async def update_role(
        self,
        conn: asyncpg.Connection,
        role_id: UUID,
        *,
        name: str,
        description: str,
        scopes: list[str],
    ) -> None:
        await self._update.exec(
            conn, role_id=role_id, name=name, description=description, scopes=scopes
        )

    async def delete_role(self, conn: asyncpg.Connection, role_id: UUID) -> None:
        await self._delete.exec(conn, role_id=role_id)
