"""Roles: named bundles of scopes, global or owned by a tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class Role:
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
        await conn.execute(
            self._insert, role.id, role.tenant_id, role.name, role.description, role.scopes
        )

    async def get_role(self, conn: asyncpg.Connection, role_id: UUID) -> Role | None:
        row = await conn.fetchrow(self._get, role_id)
        return None if row is None else Role(**row)

    async def lock_role(self, conn: asyncpg.Connection, role_id: UUID) -> Role | None:
        row = await conn.fetchrow(self._lock, role_id)
        return None if row is None else Role(**row)

    async def list_roles(
        self, conn: asyncpg.Connection, *, tenant_id: UUID | None, subtree_of: UUID | None
    ) -> list[Role]:
        return [Role(**r) for r in await conn.fetch(self._list, tenant_id, subtree_of)]

    async def update_role(
        self,
        conn: asyncpg.Connection,
        role_id: UUID,
        *,
        name: str,
        description: str,
        scopes: list[str],
    ) -> None:
        await conn.execute(self._update, role_id, name, description, scopes)

    async def delete_role(self, conn: asyncpg.Connection, role_id: UUID) -> None:
        await conn.execute(self._delete, role_id)
