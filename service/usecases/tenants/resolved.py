"""Who resolves to what: a key's resolved value at every tenant of a subtree, filtered,
streamed or paged like descendants (docs/constraints.md).

The subtree is resolved in one pass, as context.sql resolves one tenant: the tenants in
depth-first pre-order are merged with the key's entries in the same order (the entries
on the chain above the first listed tenant, then those of the range), and the entries
whose tenants are ancestors of the current one are kept as a stack. The highest locked
entry on the stack wins, else the top one (the nearest). Each tenant costs a step of
the merge, whatever its depth.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

import orjson

from service.auth.principal import Principal
from service.base.errors import FieldError, ServiceError
from service.repositories.resolved import PathEntry
from service.repositories.tenants import JsonRows, RawJson, RawJsonPage
from service.schemas.constraints import ResolvedQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active

CHUNK_ROWS = 500


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonb compares: numbers by value (1 equals 1.0), objects whatever
    their key order, true never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return Decimal(repr(a)) == Decimal(repr(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@dataclass(frozen=True, slots=True)
class Wanted:
    """What a listed tenant's resolution must match."""

    has_value: bool
    value: Any
    source_tenant_id: UUID | None
    inherited: bool | None
    locked: bool | None

    @classmethod
    def of(cls, query: ResolvedQuery) -> Wanted:
        has_value = query.value is not None
        return cls(
            has_value=has_value,
            value=query.parsed_value() if has_value else None,
            source_tenant_id=query.source_tenant_id,
            inherited=query.inherited,
            locked=query.locked,
        )

    def matches(self, tenant_id: UUID, winner: PathEntry) -> bool:
        if self.source_tenant_id is not None and winner.tenant_id != self.source_tenant_id:
            return False
        if self.inherited is not None and (winner.tenant_id != tenant_id) != self.inherited:
            return False
        if self.locked is not None and winner.locked != self.locked:
            return False
        return not self.has_value or json_equal(winner.shown, self.value)


def _within(entry_path: str, path: str) -> bool:
    """Whether the tenant at entry_path is the tenant at path or an ancestor of it."""
    return path == entry_path or path.startswith(entry_path + "/")


class _Stack:
    """The entries of the tenants above (and at) the current position, root first, each
    with the highest locked entry up to it."""

    def __init__(self) -> None:
        self.entries: list[tuple[PathEntry, PathEntry | None]] = []

    def move_to(self, path: str) -> None:
        while self.entries and not _within(self.entries[-1][0].path, path):
            self.entries.pop()

    def push(self, entry: PathEntry) -> None:
        self.move_to(entry.path)
        held = self.entries[-1][1] if self.entries else None
        self.entries.append((entry, held or (entry if entry.locked else None)))

    def winner(self) -> PathEntry | None:
        if not self.entries:
            return None
        top, highest_lock = self.entries[-1]
        return highest_lock or top


class _Entries:
    """The range's entries in path order, read chunk by chunk as the merge needs them."""

    def __init__(self, chunks: AsyncIterator[list[PathEntry]]) -> None:
        self.chunks = chunks
        self.buffer: list[PathEntry] = []
        self.index = 0
        self.done = False

    async def peek(self) -> PathEntry | None:
        while self.index >= len(self.buffer):
            if self.done:
                return None
            chunk = await anext(self.chunks, None)
            if chunk is None:
                self.done = True
                return None
            self.buffer, self.index = chunk, 0
        return self.buffer[self.index]

    def take(self) -> None:
        self.index += 1


def _document(tenant_id: UUID, key: str, winner: PathEntry) -> str:
    return orjson.dumps(
        {
            "tenant_id": str(tenant_id),
            "key": key,
            "value": winner.shown,
            "source_tenant_id": str(winner.tenant_id),
            "inherited": winner.tenant_id != tenant_id,
            "locked": winner.locked,
        }
    ).decode()


class ResolvedValues:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.tenants = deps.repos.tenants
        self.resolved = deps.repos.resolved

    @asynccontextmanager
    async def rows(
        self, principal: Principal, tenant_id: UUID, query: ResolvedQuery, *, first_rows: int
    ) -> AsyncIterator[AsyncIterator[JsonRows]]:
        """The listed tenants as chunks of rendered rows (first_rows, then CHUNK_ROWS;
        the last may be shorter) from one snapshot (cursors in a read-only transaction);
        access and the cursor are checked before anything is sent. Values are masked as
        GET /context masks them without ?reveal."""
        async with self.db.read_connection() as conn, conn.transaction(readonly=True):
            node = visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            start, chain_of = node.ancestry_path, node.id
            if query.cursor is not None:
                found = await self.tenants.get_tenant_node(conn, query.cursor)
                path = None if found is None else found.ancestry_path
                if found is None or path is None or not _within(start, path):
                    message = "not in this subtree (use the previous page's X-Next-Cursor)"
                    raise ServiceError(
                        "VALIDATION_ERROR",
                        f"cursor: {message}",
                        details=[FieldError("cursor", message)],
                    )
                # ' ' sorts after the path itself and before its descendants' '/'.
                start, chain_of = path + " ", found.id
            chain = await self.resolved.list_chain_entries_of_key(
                conn, chain_of, query.key, start=start
            )
            await self.resolved.plan_resolution_as_ordered_scans(conn)
            tenants = self.resolved.stream_subtree_paths(
                conn, node.ancestry_path, start=start, first_rows=first_rows,
                chunk_rows=CHUNK_ROWS,
            )  # fmt: skip
            entries = self.resolved.stream_range_entries_of_key(
                conn, node.ancestry_path, query.key, start=start, chunk_rows=CHUNK_ROWS
            )
            merged = self._merge(tenants, chain, entries, query.key, Wanted.of(query), first_rows)
            async with aclosing(tenants), aclosing(entries), aclosing(merged):
                yield merged

    async def _merge(
        self,
        tenants: AsyncIterator[list[tuple[UUID, str]]],
        chain: list[PathEntry],
        entries_chunks: AsyncIterator[list[PathEntry]],
        key: str,
        wanted: Wanted,
        first_rows: int,
    ) -> AsyncGenerator[JsonRows, None]:
        stack = _Stack()
        for above in chain:
            stack.push(above)
        entries = _Entries(entries_chunks)
        out = JsonRows([], [])
        size = first_rows
        async for chunk in tenants:
            for tenant_id, path in chunk:
                while (entry := await entries.peek()) is not None and entry.path <= path:
                    stack.push(entry)
                    entries.take()
                stack.move_to(path)
                winner = stack.winner()
                if winner is None or not wanted.matches(tenant_id, winner):
                    continue
                out.documents.append(_document(tenant_id, key, winner))
                out.ids.append(tenant_id)
                if len(out.ids) >= size:
                    yield out
                    out, size = JsonRows([], []), CHUNK_ROWS
        if out.ids:
            yield out

    async def page(
        self, principal: Principal, tenant_id: UUID, query: ResolvedQuery, limit: int
    ) -> RawJsonPage:
        async with self.rows(principal, tenant_id, query, first_rows=limit + 1) as chunks:
            rows = await anext(chunks, None)
        documents = [] if rows is None else rows.documents
        next_cursor = None
        if rows is not None and len(documents) > limit:
            documents, next_cursor = documents[:limit], rows.ids[limit - 1]
        return RawJsonPage(RawJson("[" + ",".join(documents) + "]"), next_cursor)
