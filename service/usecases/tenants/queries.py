"""Reading tenants and the hierarchy: single statements, no explicit transaction, except
the streamed descendants list (one read-only transaction holding its cursor)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, replace
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import FieldError, ServiceError
from service.base.etags import Rendered
from service.caches.read_cache import CachedRead, ReadCache
from service.repositories.tenants import (
    DescendantsRange,
    JsonRows,
    RawJson,
    RawJsonPage,
    TenantRow,
)
from service.schemas.tenants import ChildrenQuery, DescendantsQuery, ListTenantsQuery
from service.usecases.common.cache_fill import fill_read
from service.usecases.common.deps import Deps
from service.usecases.common.pages import Page, first_json_page, page_of
from service.usecases.common.tenant_access import active, visible, visible_active
from service.views.base import render
from service.views.tenants import Tenant

# Rows per fetch of a streamed descendants list after the first (a tenant document is
# about 0.5 kB): two chunks at most are held per list (one sent, one fetched ahead).
DESCENDANT_CHUNK_ROWS = 500


@dataclass(frozen=True, slots=True)
class TenantRowPage(Page[TenantRow]):
    # Direct children per listed tenant, when the caller asked for them.
    child_counts: dict[UUID, int] | None = None


def _max_depth(depth: int, query: DescendantsQuery) -> int | None:
    """The absolute depth a descendants list goes down to (None: every level)."""
    return None if query.max_depth is None else depth + query.max_depth


def _page(rows: list[TenantRow], limit: int) -> TenantRowPage:
    return TenantRowPage(*page_of(rows, limit, lambda row: row.id))


def _status(include_archived: bool) -> str:
    return "all" if include_archived else "active"


def _matches(tenant: TenantRow, search: str) -> bool:
    """The search rule of the search_tenants query, for single-row answers."""
    needle = search.lower()
    return needle in tenant.name.lower() or needle in tenant.slug


def _single(
    principal: Principal, query: ListTenantsQuery, found: TenantRow | None
) -> TenantRowPage:
    """A page of at most one known tenant, filtered as the list query would filter it."""
    if found is None:
        return TenantRowPage([], None)
    top = found.id == principal.tenant_id if principal.is_scoped else found.parent_id is None
    keep = (
        principal.can_see_path(found.ancestry_path)
        and (query.status == "all" or found.status == query.status)
        and (query.parent_id is None or found.parent_id == query.parent_id)
        and (not query.roots or top)
        and (query.cursor is None or found.id > query.cursor)
        and (query.search is None or _matches(found, query.search))
    )
    return TenantRowPage([found] if keep else [], None)


class TenantQueries:
    def __init__(self, deps: Deps, cache: ReadCache) -> None:
        self.db = deps.db
        self.tenants = deps.repos.tenants
        self.documents = deps.repos.documents
        self.cache = cache

    async def rendered(
        self, principal: Principal, tenant_id: UUID, *, include_archived: bool
    ) -> Rendered:
        """A tenant as the API answers it, from the read cache when it holds it; the
        caller's access is checked on every request either way."""
        cached = self.cache.get("tenant", tenant_id)
        if cached is None:
            generation = self.cache.generation
            found, replayed = await fill_read(
                self.db,
                self.cache,
                "tenant",
                tenant_id,
                lambda c: self.tenants.get_tenant(c, tenant_id),
            )
            tenant = visible(principal, found)
            cached = CachedRead(tenant, render(Tenant.of(tenant)))
            self.cache.put("tenant", tenant_id, cached, generation, replayed)
        node = visible(principal, cached.node)
        if not include_archived:
            active(node)
        return cached.rendered

    async def list_page(self, principal: Principal, query: ListTenantsQuery) -> TenantRowPage:
        async with self.db.read_connection() as conn:
            page = await self._list_page(conn, principal, query)
            if query.include_child_counts:
                # Archived children count whenever the listing itself may show archived ones.
                counts = await self.tenants.count_children(
                    conn, [t.id for t in page.items], include_archived=query.status != "active"
                )
                page = replace(page, child_counts=counts)
        return page

    async def _list_page(
        self, conn: asyncpg.Connection, principal: Principal, query: ListTenantsQuery
    ) -> TenantRowPage:
        fetch = query.limit + 1
        if query.slug is not None:
            return _single(
                principal, query, await self.tenants.get_tenant_by_slug(conn, query.slug)
            )
        if query.roots and principal.tenant_id is not None:
            # The top of a scoped caller's forest is its own tenant.
            return _single(
                principal, query, await self.tenants.get_tenant(conn, principal.tenant_id)
            )
        if query.parent_id is not None:
            visible(principal, await self.tenants.get_tenant_node(conn, query.parent_id))
        if query.search is not None:
            rows = await self.tenants.search_tenants(
                conn,
                query.search,
                subtree=principal.tenant_id,
                parent_id=query.parent_id,
                roots=query.roots,
                cursor=query.cursor,
                status=query.status,
                limit=fetch,
            )
        elif query.roots:
            rows = await self.tenants.list_root_tenants(
                conn, cursor=query.cursor, status=query.status, limit=fetch
            )
        elif query.parent_id is not None:
            rows = await self.tenants.list_children(
                conn, query.parent_id, cursor=query.cursor, status=query.status, limit=fetch
            )
        elif principal.tenant_id is not None:
            rows = await self.tenants.list_subtree_tenants(
                conn, principal.tenant_id, cursor=query.cursor, status=query.status, limit=fetch
            )
        else:
            rows = await self.tenants.list_tenants(
                conn, cursor=query.cursor, status=query.status, limit=fetch
            )
        return _page(rows, query.limit)

    async def children(
        self, principal: Principal, tenant_id: UUID, query: ChildrenQuery
    ) -> TenantRowPage:
        """Children as Tenant objects; the answer with child counts needs them."""
        async with self.db.read_connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            rows = await self.tenants.list_children(
                conn,
                tenant_id,
                cursor=query.cursor,
                status=_status(query.include_archived),
                limit=None if query.limit is None else query.limit + 1,
            )
            page = (
                _page(rows, query.limit) if query.limit is not None else TenantRowPage(rows, None)
            )
            if query.include_child_counts:
                counts = await self.tenants.count_children(
                    conn, [t.id for t in page.items], include_archived=query.include_archived
                )
                page = replace(page, child_counts=counts)
        return page

    async def children_json(
        self, principal: Principal, tenant_id: UUID, query: ChildrenQuery
    ) -> RawJsonPage:
        """The same page as children() without counts, rendered by PostgreSQL."""
        async with self.db.read_connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            return await self.documents.list_children_json(
                conn,
                tenant_id,
                cursor=query.cursor,
                status=_status(query.include_archived),
                limit=query.limit,
            )

    async def ancestors(self, principal: Principal, tenant_id: UUID) -> RawJson:
        async with self.db.read_connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            # A tenant-scoped caller sees the part of the chain inside its own subtree
            # (Principal.can_see_path, applied by the query).
            return await self.documents.list_ancestors_json(
                conn, tenant_id, visible_root=principal.tenant_id
            )

    @asynccontextmanager
    async def descendants(
        self,
        principal: Principal,
        tenant_id: UUID,
        query: DescendantsQuery,
        *,
        first_rows: int,
        chunk_rows: int = DESCENDANT_CHUNK_ROWS,
    ) -> AsyncIterator[AsyncIterator[JsonRows]]:
        """Descendants in pre-order as chunks of rendered rows (first_rows, then
        chunk_rows each), read from one snapshot (a cursor in a read-only transaction)
        while the caller consumes them. Access and the cursor are checked on entry,
        before anything is sent; a first chunk shorter than first_rows is the whole
        list (how a caller tells a heavy read from a light one before sending)."""
        async with self.db.read_connection() as conn, conn.transaction(readonly=True):
            where = await self._descendants_range(conn, principal, tenant_id, query)
            rows = self.documents.stream_descendants_json(
                conn, where, first_rows=first_rows, chunk_rows=chunk_rows
            )
            async with aclosing(rows):
                yield rows

    async def descendants_over(
        self, principal: Principal, tenant_id: UUID, query: DescendantsQuery, rows: int
    ) -> bool:
        """Whether the whole list `descendants` would send has more than `rows` tenants,
        counted without rendering any (access and the cursor checked as there)."""
        async with self.db.read_connection() as conn:
            where = await self._descendants_range(conn, principal, tenant_id, query)
            listed = await self.documents.count_descendants_capped(conn, where, cap=rows + 1)
        return listed > rows

    async def descendants_page(
        self, principal: Principal, tenant_id: UUID, query: DescendantsQuery, limit: int
    ) -> RawJsonPage:
        """One page of `limit` descendants, and the cursor of the next when more follow."""
        chunks = self.descendants(principal, tenant_id, query, first_rows=limit + 1)
        return await first_json_page(chunks, limit)

    async def _descendants_range(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        query: DescendantsQuery,
    ) -> DescendantsRange:
        """What `descendants` lists, once access and the cursor are checked."""
        node = visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
        after = None
        if query.cursor is not None:
            after = await self._cursor_path(conn, node.ancestry_path, query.cursor)
        return DescendantsRange(
            node.ancestry_path, after, _max_depth(node.depth, query), query.include_archived
        )

    async def _cursor_path(self, conn: asyncpg.Connection, path: str, cursor: UUID) -> str:
        """A page cursor is the last tenant of the previous page: one below this tenant."""
        found = await self.tenants.get_tenant_node(conn, cursor)
        if found is None or not found.ancestry_path.startswith(path + "/"):
            message = "not a descendant of this tenant (use the previous page's X-Next-Cursor)"
            raise ServiceError(
                "VALIDATION_ERROR", f"cursor: {message}", details=[FieldError("cursor", message)]
            )
        return found.ancestry_path
