"""The resolved context of a tenant, read in one statement."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.chunks import read_ahead
from service.db.repository import NamedSql, Repository
from service.repositories.tenants import JsonRows


@dataclass(frozen=True, slots=True)
class ResolvedConfig:
    key: str
    value: Any
    encrypted_value: str | None
    sensitive: bool
    locked: bool
    reveal_to_descendants: bool
    source_tenant_id: UUID
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ResolvedPermissionRow:
    key: str
    value: bool
    mode: str
    source_tenant_id: UUID
    expires_at: datetime | None = None


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
    _render_many = NamedSql("render_tenant_contexts")
    _stream_subtree = NamedSql("stream_subtree_contexts")

    async def render_tenant_contexts(
        self, conn: asyncpg.Connection, tenant_ids: list[UUID]
    ) -> list[RenderedContext]:
        """Masked context documents of the tenants that exist, in the order asked."""
        return await self._render_many.many_as(RenderedContext, conn, tenant_ids=tenant_ids)

    async def stream_subtree_contexts(
        self, conn: asyncpg.Connection, ancestry_path: str, *, first_rows: int, chunk_rows: int
    ) -> AsyncGenerator[JsonRows, None]:
        """Masked context documents of the active tenants at and below the tenant at
        ancestry_path, in pre-order, through a cursor (run inside a transaction)."""
        cursor = await self._stream_subtree.cursor(conn, path=ancestry_path)
        chunks = read_ahead(cursor, first_rows, chunk_rows)
        async with aclosing(chunks):
            async for rows in chunks:
                yield JsonRows([r["document"] for r in rows], [r["id"] for r in rows])

    async def render_tenant_context(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> RenderedContext | None:
        return await self._render.one_as(RenderedContext, conn, tenant_id=tenant_id)

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
                    expires_at=_instant(c["expires_at"]),
                )
                for c in row["config"]
            ],
            permissions=[
                ResolvedPermissionRow(
                    key=p["key"],
                    value=p["value"],
                    mode=p["mode"],
                    source_tenant_id=UUID(p["source_tenant_id"]),
                    expires_at=_instant(p["expires_at"]),
                )
                for p in row["permissions"]
            ],
        )


def _instant(text: str | None) -> datetime | None:
    """A timestamptz as to_jsonb writes it."""
    return None if text is None else datetime.fromisoformat(text)
