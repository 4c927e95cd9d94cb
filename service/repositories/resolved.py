"""The rows "who resolves to what" merges (sql/queries/resolved.sql)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class PathEntry:
    """An entry of the key at the tenant whose path is `path`, its value as shown."""

    path: str
    tenant_id: UUID
    locked: bool
    shown: Any


async def _chunks(
    cursor: asyncpg.cursor.Cursor[asyncpg.Record], first_rows: int, chunk_rows: int
) -> AsyncGenerator[list[asyncpg.Record], None]:
    """first_rows rows, then chunk_rows at a time, fetched only when asked for: two
    cursors of one connection are read in turns, never at once (no read-ahead)."""
    size = first_rows
    while True:
        rows = await cursor.fetch(size)
        if rows:
            yield rows
        if len(rows) < size:
            return
        size = chunk_rows


def _entry(row: asyncpg.Record) -> PathEntry:
    return PathEntry(row["ancestry_path"], row["tenant_id"], row["locked"], row["shown"])


class ResolvedRepository(Repository):
    _paths = NamedSql("stream_subtree_paths")
    _chain = NamedSql("list_chain_entries_of_key")
    _range = NamedSql("stream_range_entries_of_key")
    _plan = NamedSql("plan_resolution_as_ordered_scans")

    async def plan_resolution_as_ordered_scans(self, conn: asyncpg.Connection) -> None:
        """Until the transaction ends, no sort, hash or bitmap scan (the SQL says why)."""
        await self._plan.exec(conn)

    async def stream_subtree_paths(
        self, conn: asyncpg.Connection, path: str, *, start: str, first_rows: int, chunk_rows: int
    ) -> AsyncGenerator[list[tuple[UUID, str]], None]:
        """(id, path) of the subtree's active tenants in pre-order from `start`, through a
        cursor (inside a transaction): first_rows rows, then chunk_rows at a time."""
        cursor = await self._paths.cursor(conn, path=path, start=start)
        chunks = _chunks(cursor, first_rows, chunk_rows)
        async with aclosing(chunks):
            async for rows in chunks:
                yield [(r["id"], r["ancestry_path"]) for r in rows]

    async def list_chain_entries_of_key(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str, *, start: str
    ) -> list[PathEntry]:
        rows = await self._chain.many(conn, tenant_id=tenant_id, key=key, start=start)
        return [_entry(r) for r in rows]

    async def stream_range_entries_of_key(
        self, conn: asyncpg.Connection, path: str, key: str, *, start: str, chunk_rows: int
    ) -> AsyncGenerator[list[PathEntry], None]:
        cursor = await self._range.cursor(conn, path=path, key=key, start=start)
        chunks = _chunks(cursor, chunk_rows, chunk_rows)
        async with aclosing(chunks):
            async for rows in chunks:
                yield [_entry(r) for r in rows]
