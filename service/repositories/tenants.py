"""Tenants and the tree: reads, inserts, archive/restore and the set-based move."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository

NIL_STATUS_ALL = "all"


@dataclass(frozen=True, slots=True)
class Tenant:
    id: UUID
    parent_id: UUID | None
    name: str
    slug: str
    ancestry_path: str
    depth: int
    metadata: dict[str, Any]
    isolation_strategy: str
    region: str
    status: str
    deleted_at: datetime | None
    created_at: datetime
    updated_at: datetime
    config: dict[str, Any]

    @property
    def is_archived(self) -> bool:
        return self.status == "archived"

    @property
    def root_id(self) -> UUID:
        return root_of(self.ancestry_path)


@dataclass(frozen=True, slots=True)
class TenantNode:
    """Where a tenant sits in the tree: enough to lock and validate a change."""

    id: UUID
    parent_id: UUID | None
    ancestry_path: str
    depth: int
    status: str
    isolation_strategy: str
    region: str

    @property
    def is_archived(self) -> bool:
        return self.status == "archived"

    @property
    def root_id(self) -> UUID:
        return root_of(self.ancestry_path)


@dataclass(frozen=True, slots=True)
class NewTenant:
    id: UUID
    parent_id: UUID | None
    name: str
    slug: str
    ancestry_path: str
    depth: int
    metadata: dict[str, Any]
    isolation_strategy: str
    region: str


@dataclass(frozen=True, slots=True)
class RawJson:
    """A JSON document PostgreSQL rendered (tenant_documents), sent on untouched."""

    text: str


@dataclass(frozen=True, slots=True)
class RawJsonPage:
    """One page of a list rendered in PostgreSQL, and the cursor of the next (if any)."""

    body: RawJson
    next_cursor: UUID | None


def root_of(ancestry_path: str) -> UUID:
    return UUID(ancestry_path[1:37])


def _tenant(row: asyncpg.Record) -> Tenant:
    return Tenant(**row)


def _node(row: asyncpg.Record) -> TenantNode:
    return TenantNode(**row)


class TenantsRepository(Repository):
    _get = NamedSql("get_tenant")
    _get_many = NamedSql("get_tenants_by_ids")
    _get_by_slug = NamedSql("get_tenant_by_slug")
    _node = NamedSql("get_tenant_node")
    _nodes = NamedSql("get_tenant_nodes")
    _lock_roots_shared = NamedSql("lock_tree_roots_shared")
    _lock_roots_exclusive = NamedSql("lock_tree_roots_exclusive")
    _lock_nodes_shared = NamedSql("lock_tenant_nodes_shared")
    _lock_node = NamedSql("lock_tenant_node")
    _existing_slugs = NamedSql("find_existing_slugs")
    _insert = NamedSql("insert_tenants")
    _insert_closure = NamedSql("insert_closure_for_new_tenants")
    _list = NamedSql("list_tenants")
    _list_subtree = NamedSql("list_subtree_tenants")
    _list_roots = NamedSql("list_root_tenants")
    _search = NamedSql("search_tenants")
    _count_children = NamedSql("count_children")
    _children = NamedSql("list_children")
    _children_json = NamedSql("list_children_json")
    _ancestors_json = NamedSql("list_ancestors_json")
    _descendants_json = NamedSql("list_descendants_json")
    _has_active_children = NamedSql("has_active_children")
    _update_fields = NamedSql("update_tenant_fields")
    _archive = NamedSql("archive_tenant")
    _restore = NamedSql("restore_tenant")
    _subtree_height = NamedSql("subtree_height")
    _detach = NamedSql("detach_subtree_closure")
    _attach = NamedSql("attach_subtree_closure")
    _rewrite_paths = NamedSql("rewrite_subtree_paths")

    async def get_tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> Tenant | None:
        row = await conn.fetchrow(self._get, tenant_id)
        return None if row is None else _tenant(row)

    async def get_tenants_by_ids(
        self, conn: asyncpg.Connection, ids: Sequence[UUID]
    ) -> dict[UUID, Tenant]:
        rows = await conn.fetch(self._get_many, list(ids))
        return {row["id"]: _tenant(row) for row in rows}

    async def get_tenant_by_slug(self, conn: asyncpg.Connection, slug: str) -> Tenant | None:
        row = await conn.fetchrow(self._get_by_slug, slug)
        return None if row is None else _tenant(row)

    async def get_tenant_node(self, conn: asyncpg.Connection, tenant_id: UUID) -> TenantNode | None:
        row = await conn.fetchrow(self._node, tenant_id)
        return None if row is None else _node(row)

    async def get_tenant_nodes(
        self, conn: asyncpg.Connection, ids: Sequence[UUID]
    ) -> dict[UUID, TenantNode]:
        rows = await conn.fetch(self._nodes, list(ids))
        return {row["id"]: _node(row) for row in rows}

    async def lock_tree_roots_shared(self, conn: asyncpg.Connection, roots: Sequence[UUID]) -> None:
        if roots:
            await conn.fetch(self._lock_roots_shared, list(roots))

    async def lock_tree_roots_exclusive(
        self, conn: asyncpg.Connection, roots: Sequence[UUID]
    ) -> None:
        if roots:
            await conn.fetch(self._lock_roots_exclusive, list(roots))

    async def lock_tenant_nodes_shared(
        self, conn: asyncpg.Connection, ids: Sequence[UUID]
    ) -> dict[UUID, TenantNode]:
        rows = await conn.fetch(self._lock_nodes_shared, list(ids))
        return {row["id"]: _node(row) for row in rows}

    async def lock_tenant_node(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> TenantNode | None:
        row = await conn.fetchrow(self._lock_node, tenant_id)
        return None if row is None else _node(row)

    async def find_existing_slugs(self, conn: asyncpg.Connection, slugs: Sequence[str]) -> set[str]:
        rows = await conn.fetch(self._existing_slugs, list(slugs))
        return {row["slug"] for row in rows}

    async def insert_tenants(self, conn: asyncpg.Connection, tenants: Sequence[NewTenant]) -> None:
        await conn.execute(
            self._insert,
            [t.id for t in tenants],
            [t.parent_id for t in tenants],
            [t.name for t in tenants],
            [t.slug for t in tenants],
            [t.ancestry_path for t in tenants],
            [t.depth for t in tenants],
            [t.metadata for t in tenants],
            [t.isolation_strategy for t in tenants],
            [t.region for t in tenants],
        )
        await conn.execute(
            self._insert_closure, [t.id for t in tenants], [t.parent_id for t in tenants]
        )

    async def list_tenants(
        self, conn: asyncpg.Connection, *, cursor: UUID | None, status: str, limit: int
    ) -> list[Tenant]:
        return [_tenant(r) for r in await conn.fetch(self._list, cursor, status, limit)]

    async def list_subtree_tenants(
        self,
        conn: asyncpg.Connection,
        root: UUID,
        *,
        cursor: UUID | None,
        status: str,
        limit: int,
    ) -> list[Tenant]:
        rows = await conn.fetch(self._list_subtree, root, cursor, status, limit)
        return [_tenant(r) for r in rows]

    async def list_root_tenants(
        self, conn: asyncpg.Connection, *, cursor: UUID | None, status: str, limit: int
    ) -> list[Tenant]:
        return [_tenant(r) for r in await conn.fetch(self._list_roots, cursor, status, limit)]

    async def search_tenants(
        self,
        conn: asyncpg.Connection,
        text: str,
        *,
        subtree: UUID | None,
        parent_id: UUID | None,
        roots: bool,
        cursor: UUID | None,
        status: str,
        limit: int,
    ) -> list[Tenant]:
        rows = await conn.fetch(
            self._search, text, subtree, parent_id, roots, cursor, status, limit
        )
        return [_tenant(r) for r in rows]

    async def count_children(
        self, conn: asyncpg.Connection, ids: Sequence[UUID], *, include_archived: bool
    ) -> dict[UUID, int]:
        """Direct children per tenant; every id is in the answer (0 when it has none)."""
        counts = dict.fromkeys(ids, 0)
        if ids:
            for row in await conn.fetch(self._count_children, list(ids), include_archived):
                counts[row["parent_id"]] = row["children"]
        return counts

    async def list_children(
        self,
        conn: asyncpg.Connection,
        parent_id: UUID,
        *,
        cursor: UUID | None = None,
        status: str = "active",
        limit: int | None = None,
    ) -> list[Tenant]:
        rows = await conn.fetch(self._children, parent_id, cursor, status, limit)
        return [_tenant(r) for r in rows]

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
        row = await conn.fetchrow(self._children_json, parent_id, cursor, status, limit)
        assert row is not None
        return RawJsonPage(RawJson(row["body"]), row["next_cursor"])

    async def list_ancestors_json(
        self, conn: asyncpg.Connection, tenant_id: UUID, *, visible_root: UUID | None
    ) -> RawJson:
        """Ancestors root first as one JSON array, only those inside visible_root's
        subtree when it is set (a tenant-scoped caller's own tenant)."""
        return RawJson(await conn.fetchval(self._ancestors_json, tenant_id, visible_root))

    async def list_descendants_json(
        self,
        conn: asyncpg.Connection,
        ancestry_path: str,
        *,
        max_depth: int | None,
        include_archived: bool,
    ) -> RawJson:
        """Descendants of the tenant at ancestry_path in pre-order as one JSON array,
        down to absolute depth max_depth."""
        text = await conn.fetchval(
            self._descendants_json, ancestry_path, max_depth, include_archived
        )
        return RawJson(text)

    async def has_active_children(self, conn: asyncpg.Connection, tenant_id: UUID) -> bool:
        return bool(await conn.fetchval(self._has_active_children, tenant_id))

    async def update_tenant_fields(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        *,
        name: str,
        slug: str,
        metadata: dict[str, Any],
    ) -> None:
        await conn.execute(self._update_fields, tenant_id, name, slug, metadata)

    async def archive_tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> datetime:
        deleted_at: datetime = await conn.fetchval(self._archive, tenant_id)
        return deleted_at

    async def restore_tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> None:
        await conn.execute(self._restore, tenant_id)

    async def subtree_height(self, conn: asyncpg.Connection, tenant_id: UUID) -> tuple[int, int]:
        row = await conn.fetchrow(self._subtree_height, tenant_id)
        assert row is not None
        return int(row["height"] or 0), int(row["size"])

    async def move_subtree(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        *,
        new_parent_id: UUID | None,
        old_path: str,
        new_path: str,
        depth_delta: int,
    ) -> None:
        await conn.execute(self._detach, tenant_id)
        if new_parent_id is not None:
            await conn.execute(self._attach, tenant_id, new_parent_id)
        await conn.execute(
            self._rewrite_paths, tenant_id, new_path, old_path, depth_delta, new_parent_id
        )
