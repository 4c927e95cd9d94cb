"""Tenant documents rendered by PostgreSQL (one renderer, migration 0052): the children
and ancestors lists as one JSON array each, the descendants streamed through a cursor."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from service.db.chunks import read_ahead
from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class RawJson:
    """A JSON document PostgreSQL rendered (tenant_document_texts), sent on untouched."""

    text: str


@dataclass(frozen=True, slots=True)
class RawJsonPage:
    """One page of a list rendered in PostgreSQL, and the cursor of the next (if any)."""

    body: RawJson
    next_cursor: UUID | None


@dataclass(frozen=True, slots=True)
class JsonRows:
    """Consecutive rows PostgreSQL rendered: each one's JSON text and its id."""

    documents: list[str]
    ids: list[UUID]


class TenantDocumentsRepository(Repository):
    _children_json = NamedSql("list_children_json")
    _ancestors_json = NamedSql("list_ancestors_json")
    _plan_merges = NamedSql("plan_descendants_as_merges")
    _descendants_json = NamedSql("stream_descendants_json")
    _count_descendants = NamedSql("count_descendants_capped")

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

    async def stream_descendants_json(
        self,
        conn: asyncpg.Connection,
        ancestry_path: str,
        *,
        after: str | None,
        max_depth: int | None,
        include_archived: bool,
        first_rows: int,
        chunk_rows: int,
    ) -> AsyncGenerator[JsonRows, None]:
        """Descendants of the tenant at ancestry_path in pre-order, after the path
        `after`, down to absolute depth max_depth, through a cursor (so in bounded memory
        whatever the subtree): first_rows rows, then chunk_rows at a time, read ahead
        (service/db/chunks.py). Run inside a transaction, whose planner then joins only
        by merging (plan_descendants_as_merges) until it ends."""
        await self._plan_merges.exec(conn)
        cursor = await self._descendants_json.cursor(
            conn,
            path=ancestry_path,
            after=after,
            max_depth=max_depth,
            include_archived=include_archived,
        )
        chunks = read_ahead(cursor, first_rows, chunk_rows)
        async with aclosing(chunks):
            async for rows in chunks:
                yield JsonRows([r["document"] for r in rows], [r["id"] for r in rows])

    async def count_descendants_capped(
        self,
        conn: asyncpg.Connection,
        ancestry_path: str,
        *,
        after: str | None,
        max_depth: int | None,
        include_archived: bool,
        cap: int,
    ) -> int:
        """How many rows stream_descendants_json would yield, up to cap."""
        return int(
            await self._count_descendants.value(
                conn,
                path=ancestry_path,
                after=after,
                max_depth=max_depth,
                include_archived=include_archived,
                cap=cap,
            )
        )
