"""A key's resolved value across a subtree (sql/queries/resolved.sql)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.chunks import read_ahead
from service.db.repository import NamedSql, Repository
from service.repositories.tenants import JsonRows


@dataclass(frozen=True, slots=True)
class ResolvedFilter:
    """What a listed tenant's resolution must match (None: anything)."""

    value: Any = None  # the shown JSON value (a sensitive one is "***")
    has_value: bool = False
    source_tenant_id: UUID | None = None
    inherited: bool | None = None
    locked: bool | None = None


class ResolvedRepository(Repository):
    _stream = NamedSql("stream_resolved_key_json")

    async def stream_resolved_key_json(
        self,
        conn: asyncpg.Connection,
        path: str,
        key: str,
        *,
        start: str,
        where: ResolvedFilter,
        first_rows: int,
        chunk_rows: int,
    ) -> AsyncGenerator[JsonRows, None]:
        """The subtree's tenants where key resolves, in pre-order from `start`, through
        a cursor (run inside a transaction): first_rows rows, then chunk_rows at a time."""
        cursor = await self._stream.cursor(
            conn,
            path=path,
            key=key,
            start=start,
            value=where.value if where.has_value else None,
            source_tenant_id=where.source_tenant_id,
            inherited=where.inherited,
            locked=where.locked,
        )
        chunks = read_ahead(cursor, first_rows, chunk_rows)
        async with aclosing(chunks):
            async for rows in chunks:
                yield JsonRows([r["document"] for r in rows], [r["id"] for r in rows])
