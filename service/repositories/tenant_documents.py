"""Tenant documents rendered by PostgreSQL (one renderer, migration 0052): the children
and ancestors lists as one JSON array each, the descendants streamed through a cursor."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from uuid import UUID

import asyncpg

from service.db.chunks import read_ahead
from service.db.repository import NamedSql, Repository
from service.repositories.tenants import DescendantsRange, JsonRows, RawJson, RawJsonPage


class TenantDocumentsRepository(Repository):
    _children_json = NamedSql("list_children_json")
    _ancestors_json = NamedSql("list_ancestors_json")
    _plan_merges = NamedSql("plan_descendants_as_merges")
    _descendants_json = NamedSql("stream_descendants_json")
    _count_descendants = NamedSql("count_descendants_capped")

    async def list_ancestors_json(
        self, conn: asyncpg.Connection, tenant_id: UUID, *, visible_root: UUID | None
    ) -> RawJson:
        """Ancestors root first as one JSON array, only those inside visible_root's
        subtree when it is set (a tenant-scoped caller's own tenant)."""
        return RawJson(
            await self._ancestors_json.value(
                conn, tenant_id=tenant_id, visible_root_id=visible_root
            )
        )

    async def list_children_json(
        self,
        conn: asyncpg.Connection,
        parent_id: UUID,
        *,
        cursor: UUID | None,
        status: str,
        limit: int | None,
    ) -> RawJsonPage:
        """list_children as one JSON array; next_cursor set when more children follow."""
        row = await self._children_json.one(
            conn, parent_id=parent_id, cursor_id=cursor, status_filter=status, page_size=limit
        )
        assert row is not None
        return RawJsonPage(RawJson(row["body"]), row["next_cursor"])

    async def stream_descendants_json(
        self, conn: asyncpg.Connection, r: DescendantsRange, *, first_rows: int, chunk_rows: int
    ) -> AsyncGenerator[JsonRows, None]:
        """The descendants of range r through a cursor (so in bounded memory whatever the
        subtree): first_rows rows, then chunk_rows at a time, read ahead
        (service/db/chunks.py). Run inside a transaction, whose planner then joins only
        by merging (plan_descendants_as_merges) until it ends."""
        await self._plan_merges.exec(conn)
        cursor = await self._descendants_json.cursor(
            conn, path=r.path, after=r.after, max_depth=r.max_depth, include_archived=r.archived
        )
        chunks = read_ahead(cursor, first_rows, chunk_rows)
        async with aclosing(chunks):
            async for rows in chunks:
                yield JsonRows([row["document"] for row in rows], [row["id"] for row in rows])

    async def count_descendants_capped(
        self, conn: asyncpg.Connection, r: DescendantsRange, *, cap: int
    ) -> int:
        """How many rows stream_descendants_json would yield for range r, up to cap."""
        listed = await self._count_descendants.value(
            conn, path=r.path, after=r.after, max_depth=r.max_depth, include_archived=r.archived,
            cap=cap,
        )  # fmt: skip
        return int(listed)
