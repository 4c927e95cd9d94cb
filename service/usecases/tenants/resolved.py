"""Who resolves to what: a key's resolved value at every tenant of a subtree, filtered,
streamed or paged like descendants (docs/constraints.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from uuid import UUID

from service.auth.principal import Principal
from service.errors import FieldError, ServiceError
from service.repositories.resolved import ResolvedFilter
from service.repositories.tenants import JsonRows, RawJson, RawJsonPage
from service.schemas.constraints import ResolvedQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active

CHUNK_ROWS = 500


def _filter(query: ResolvedQuery) -> ResolvedFilter:
    has_value = query.value is not None
    return ResolvedFilter(
        value=query.parsed_value() if has_value else None,
        has_value=has_value,
        source_tenant_id=query.source_tenant_id,
        inherited=query.inherited,
        locked=query.locked,
    )


class ResolvedValues:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.tenants = deps.repos.tenants
        self.resolved = deps.repos.resolved

    @asynccontextmanager
    async def rows(
        self, principal: Principal, tenant_id: UUID, query: ResolvedQuery, *, first_rows: int
    ) -> AsyncIterator[AsyncIterator[JsonRows]]:
        """The listed tenants as chunks of rendered rows from one snapshot (a cursor in a
        read-only transaction); access and the cursor are checked before anything is
        sent. Values are masked as GET /context masks them without ?reveal."""
        async with self.db.read_connection() as conn, conn.transaction(readonly=True):
            node = visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            start = node.ancestry_path
            if query.cursor is not None:
                found = await self.tenants.get_tenant_node(conn, query.cursor)
                path = None if found is None else found.ancestry_path
                if path is None or not (path == start or path.startswith(start + "/")):
                    message = "not in this subtree (use the previous page's X-Next-Cursor)"
                    raise ServiceError(
                        "VALIDATION_ERROR",
                        f"cursor: {message}",
                        details=[FieldError("cursor", message)],
                    )
                # ' ' sorts after the path itself and before its descendants' '/'.
                start = path + " "
            chunks = self.resolved.stream_resolved_key_json(
                conn,
                node.ancestry_path,
                query.key,
                start=start,
                where=_filter(query),
                first_rows=first_rows,
                chunk_rows=CHUNK_ROWS,
            )
            async with aclosing(chunks):
                yield chunks

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
