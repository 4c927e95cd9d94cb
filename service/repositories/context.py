"""The resolved context of a tenant, read in one statement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    key: str
    value: Any
    encrypted_value: str | None
    sensitive: bool
    locked: bool
    reveal_to_descendants: bool
    source_tenant_id: UUID


@dataclass(frozen=True, slots=True)
class ResolvedPermissionRow:
    key: str
    value: bool
    mode: str
    source_tenant_id: UUID


@dataclass(frozen=True, slots=True)
class ResolvedContext:
    id: UUID
    ancestry_path: str
    depth: int
    isolation_strategy: str
    status: str
    config: list[ResolvedConfig]
    permissions: list[ResolvedPermissionRow]


@dataclass(frozen=True, slots=True)
class RenderedContext:
    """A tenant's position and its masked context document, rendered by PostgreSQL."""

    id: UUID
    ancestry_path: str
    depth: int
    status: str
    document: str


class ContextRepository(Repository):
    _resolve = NamedSql("resolve_tenant_context")
    _render = NamedSql("render_tenant_context")

    async def render_tenant_context(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> RenderedContext | None:
        row = await self._render.one(conn, tenant_id=tenant_id)
        return None if row is None else RenderedContext(**row)

    async def resolve_tenant_context(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> ResolvedContext | None:
        row = await self._resolve.one(conn, tenant_id=tenant_id)
        if row is None:
            return None
        return ResolvedContext(
            id=row["id"],
            ancestry_path=row["ancestry_path"],
            depth=row["depth"],
            isolation_strategy=row["isolation_strategy"],
            status=row["status"],
            config=[
                ResolvedConfig(
                    key=c["key"],
                    value=c["value"],
                    encrypted_value=c["encrypted_value"],
                    sensitive=c["sensitive"],
                    locked=c["locked"],
                    reveal_to_descendants=c["reveal_to_descendants"],
                    source_tenant_id=UUID(c["source_tenant_id"]),
                )
                for c in row["config"]
            ],
            permissions=[
                ResolvedPermissionRow(
                    key=p["key"],
                    value=p["value"],
                    mode=p["mode"],
                    source_tenant_id=UUID(p["source_tenant_id"]),
                )
                for p in row["permissions"]
            ],
        )
