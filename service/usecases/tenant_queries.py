"""Reading tenants and the hierarchy: single statements, no explicit transaction."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from service.auth.principal import Principal
from service.repositories.tenants import Tenant
from service.schemas.tenants import ChildrenQuery, DescendantsQuery, ListTenantsQuery
from service.usecases.deps import Deps
from service.usecases.tenant_access import active, visible, visible_active


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Tenant]
    next_cursor: UUID | None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


def _page(rows: list[Tenant], limit: int) -> Page:
    if len(rows) > limit:
        return Page(rows[:limit], rows[limit - 1].id)
    return Page(rows, None)


class TenantQueries:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.tenants = deps.repos.tenants

    async def get(self, principal: Principal, tenant_id: UUID, *, include_archived: bool) -> Tenant:
        tenant = visible(
            principal, await self.db.run(lambda c: self.tenants.get_tenant(c, tenant_id))
        )
        return tenant if include_archived else active(tenant)

    async def list_page(self, principal: Principal, query: ListTenantsQuery) -> Page:
        fetch = query.limit + 1
        async with self.db.connection() as conn:
            if query.slug is not None:
                found = await self.tenants.get_tenant_by_slug(conn, query.slug)
                keep = (
                    found is not None
                    and principal.can_see_path(found.ancestry_path)
                    and (query.status == "all" or found.status == query.status)
                    and (query.parent_id is None or found.parent_id == query.parent_id)
                    and (query.cursor is None or found.id > query.cursor)
                )
                return Page([found] if keep and found else [], None)
            if query.parent_id is not None:
                parent = visible(
                    principal, await self.tenants.get_tenant_node(conn, query.parent_id)
                )
                rows = await self.tenants.list_children(
                    conn, parent.id, cursor=query.cursor, status=query.status, limit=fetch
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

    async def children(self, principal: Principal, tenant_id: UUID, query: ChildrenQuery) -> Page:
        async with self.db.connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            rows = await self.tenants.list_children(
                conn,
                tenant_id,
                cursor=query.cursor,
                status="all" if query.include_archived else "active",
                limit=None if query.limit is None else query.limit + 1,
            )
        return _page(rows, query.limit) if query.limit is not None else Page(rows, None)

    async def ancestors(self, principal: Principal, tenant_id: UUID) -> list[Tenant]:
        async with self.db.connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            rows = await self.tenants.list_ancestors(conn, tenant_id)
        # A tenant-scoped caller sees the part of the chain inside its own subtree.
        return [t for t in rows if principal.can_see_path(t.ancestry_path)]

    async def descendants(
        self, principal: Principal, tenant_id: UUID, query: DescendantsQuery
    ) -> list[Tenant]:
        async with self.db.connection() as conn:
            node = visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            return await self.tenants.list_descendants(
                conn,
                node.ancestry_path,
                max_depth=None if query.max_depth is None else node.depth + query.max_depth,
                include_archived=query.include_archived,
            )
