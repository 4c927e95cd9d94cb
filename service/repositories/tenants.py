"""Tenants and the tree: reads, inserts, archive/restore and the set-based move. Lists
rendered as JSON by PostgreSQL are in tenant_documents.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


class _Placed:
    """What a tenant row and a tree node both answer: archived or not, and its root."""

    __slots__ = ()
    status: str
    ancestry_path: str

    @property
    def is_archived(self) -> bool:
        return self.status == "archived"

    @property
    def root_id(self) -> UUID:
        return root_of(self.ancestry_path)


@dataclass(frozen=True, slots=True)
class TenantRow(_Placed):
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


@dataclass(frozen=True, slots=True)
class TenantNode(_Placed):
    """Where a tenant sits in the tree: enough to lock and validate a change."""

    id: UUID
    parent_id: UUID | None
    ancestry_path: str
    depth: int
    status: str
    isolation_strategy: str
    region: str


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
    """A JSON document PostgreSQL rendered (tenant_documents.py), sent on untouched."""

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


@dataclass(frozen=True, slots=True)
class DescendantsRange:
    """The descendants a list reads: below the tenant at `path` in pre-order, after the
    path `after` (a page's cursor; None: from the first), down to absolute depth
    max_depth (None: every level), archived ones only when `archived`."""

    path: str
    after: str | None
    max_depth: int | None
    archived: bool


def root_of(ancestry_path: str) -> UUID:
    return UUID(ancestry_path[1:37])


def _tenant(row: asyncpg.Record) -> TenantRow:
    return TenantRow(**row)


def _nodes_by_id(rows: Sequence[asyncpg.Record]) -> dict[UUID, TenantNode]:
    return {row["id"]: TenantNode(**row) for row in rows}


class TenantsRepository(Repository):
    _get = NamedSql("get_tenant")
    _get_many = NamedSql("get_tenants_by_ids")
    _get_by_slug = NamedSql("get_tenant_by_slug")
    _node = NamedSql("get_tenant_node")
    _nodes = NamedSql("get_tenant_nodes")
    _lock_roots_shared = NamedSql("lock_tree_roots_shared")
    _lock_roots_exclusive = NamedSql("lock_tree_roots_exclusive")
    _lock_nodes_shared = NamedSql("lock_tenant_nodes_shared")
    _lock_with_root = NamedSql("lock_tenant_and_root_shared")
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
    _has_active_children = NamedSql("has_active_children")
    _update_fields = NamedSql("update_tenant_fields")
    _archive = NamedSql("archive_tenant")
    _restore = NamedSql("restore_tenant")
    _subtree_height = NamedSql("subtree_height")
    _detach = NamedSql("detach_subtree_closure")
    _attach = NamedSql("attach_subtree_closure")
    _rewrite_paths = NamedSql("rewrite_subtree_paths")

    async def get_tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> TenantRow | None:
        return await self._get.one_as(TenantRow, conn, tenant_id=tenant_id)

    async def get_tenants_by_ids(
        self, conn: asyncpg.Connection, ids: Sequence[UUID]
    ) -> dict[UUID, TenantRow]:
        rows = await self._get_many.many(conn, tenant_ids=list(ids))
        return {row["id"]: _tenant(row) for row in rows}

    async def get_tenant_by_slug(self, conn: asyncpg.Connection, slug: str) -> TenantRow | None:
        return await self._get_by_slug.one_as(TenantRow, conn, slug=slug)

    async def get_tenant_node(self, conn: asyncpg.Connection, tenant_id: UUID) -> TenantNode | None:
        return await self._node.one_as(TenantNode, conn, tenant_id=tenant_id)

    async def get_tenant_nodes(
        self, conn: asyncpg.Connection, ids: Sequence[UUID]
    ) -> dict[UUID, TenantNode]:
        return _nodes_by_id(await self._nodes.many(conn, tenant_ids=list(ids)))

    async def lock_tree_roots_shared(self, conn: asyncpg.Connection, roots: Sequence[UUID]) -> None:
        if roots:
            await self._lock_roots_shared.many(conn, root_ids=list(roots))

    async def lock_tree_roots_exclusive(
        self, conn: asyncpg.Connection, roots: Sequence[UUID]
    ) -> None:
        if roots:
            await self._lock_roots_exclusive.many(conn, root_ids=list(roots))

    async def lock_tenant_nodes_shared(
        self, conn: asyncpg.Connection, ids: Sequence[UUID]
    ) -> dict[UUID, TenantNode]:
        return _nodes_by_id(await self._lock_nodes_shared.many(conn, tenant_ids=list(ids)))

    async def lock_tenant_and_root_shared(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> dict[UUID, TenantNode]:
        """The tenant and its tree's root, share-locked root first (one round trip)."""
        return _nodes_by_id(await self._lock_with_root.many(conn, tenant_id=tenant_id))

    async def lock_tenant_node(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> TenantNode | None:
        return await self._lock_node.one_as(TenantNode, conn, tenant_id=tenant_id)

    async def find_existing_slugs(self, conn: asyncpg.Connection, slugs: Sequence[str]) -> set[str]:
        rows = await self._existing_slugs.many(conn, slugs=list(slugs))
        return {row["slug"] for row in rows}

    async def insert_tenants(self, conn: asyncpg.Connection, tenants: Sequence[NewTenant]) -> None:
        await self._insert.exec(
            conn,
            tenant_ids=[t.id for t in tenants],
            parent_ids=[t.parent_id for t in tenants],
            names=[t.name for t in tenants],
            slugs=[t.slug for t in tenants],
            ancestry_paths=[t.ancestry_path for t in tenants],
            depths=[t.depth for t in tenants],
            metadata_values=[t.metadata for t in tenants],
            isolation_strategies=[t.isolation_strategy for t in tenants],
            regions=[t.region for t in tenants],
        )
        await self._insert_closure.exec(
            conn, tenant_ids=[t.id for t in tenants], parent_ids=[t.parent_id for t in tenants]
        )

    async def list_tenants(
        self, conn: asyncpg.Connection, *, cursor: UUID | None, status: str, limit: int
    ) -> list[TenantRow]:
        return await self._list.many_as(
            TenantRow, conn, cursor_id=cursor, status_filter=status, page_size=limit
        )

    async def list_root_tenants(
        self, conn: asyncpg.Connection, *, cursor: UUID | None, status: str, limit: int
    ) -> list[TenantRow]:
        return await self._list_roots.many_as(
            TenantRow, conn, cursor_id=cursor, status_filter=status, page_size=limit
        )

    async def list_subtree_tenants(
        self,
        conn: asyncpg.Connection,
        root: UUID,
        *,
        cursor: UUID | None,
        status: str,
        limit: int,
    ) -> list[TenantRow]:
        return await self._list_subtree.many_as(
            TenantRow, conn, root_id=root, cursor_id=cursor, status_filter=status, page_size=limit
        )

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
    ) -> list[TenantRow]:
        return await self._search.many_as(
            TenantRow,
            conn,
            search_text=text,
            subtree_root_id=subtree,
            parent_id=parent_id,
            roots_only=roots,
            cursor_id=cursor,
            status_filter=status,
            page_size=limit,
        )

    async def count_children(
        self, conn: asyncpg.Connection, ids: Sequence[UUID], *, include_archived: bool
    ) -> dict[UUID, int]:
        """Direct children per tenant; every id is in the answer (0 when it has none)."""
        counts = dict.fromkeys(ids, 0)
        if ids:
            for row in await self._count_children.many(
                conn, parent_ids=list(ids), include_archived=include_archived
            ):
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
    ) -> list[TenantRow]:
        return await self._children.many_as(
            TenantRow,
            conn,
            parent_id=parent_id,
            cursor_id=cursor,
            status_filter=status,
            page_size=limit,
        )

    async def has_active_children(self, conn: asyncpg.Connection, tenant_id: UUID) -> bool:
        return bool(await self._has_active_children.value(conn, tenant_id=tenant_id))

    async def update_tenant_fields(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        *,
        name: str,
        slug: str,
        metadata: dict[str, Any],
    ) -> None:
        await self._update_fields.exec(
            conn, tenant_id=tenant_id, name=name, slug=slug, metadata=metadata
        )

    async def archive_tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> datetime:
        deleted_at: datetime = await self._archive.value(conn, tenant_id=tenant_id)
        return deleted_at

    async def restore_tenant(self, conn: asyncpg.Connection, tenant_id: UUID) -> None:
        await self._restore.exec(conn, tenant_id=tenant_id)

    async def subtree_height(self, conn: asyncpg.Connection, tenant_id: UUID) -> tuple[int, int]:
        row = await self._subtree_height.one(conn, tenant_id=tenant_id)
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
        await self._detach.exec(conn, tenant_id=tenant_id)
        if new_parent_id is not None:
            await self._attach.exec(conn, tenant_id=tenant_id, new_parent_id=new_parent_id)
        await self._rewrite_paths.exec(
            conn,
            tenant_id=tenant_id,
            new_path=new_path,
            old_path=old_path,
            depth_delta=depth_delta,
            new_parent_id=new_parent_id,
        )
