"""Revisions and their log (migration 0033): the current revision, the retention
horizon, and the log of context changes the stream reads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class Horizon:
    """The newest revision retention removed, and the oldest one the log still holds."""

    purged_through: int
    oldest_kept: int


@dataclass(frozen=True, slots=True)
class LoggedChange:
    """One tenant a revision changed, as a subscriber of a subtree sees it: `inside`
    when the tenant is active inside the subtree after the revision (else it left)."""

    revision: int
    idx: int
    tenant_id: UUID
    change: str
    inside: bool


@dataclass(frozen=True, slots=True)
class RevisionTenant:
    idx: int
    tenant_id: UUID
    change: str
    path: str | None
    left_path: str | None


@dataclass(frozen=True, slots=True)
class Revision:
    revision: int
    committed_at: datetime
    audit_ids: list[UUID]
    tenant_count: int


class RevisionsRepository(Repository):
    _current = NamedSql("current_revision")
    _horizon = NamedSql("revision_horizon")
    _changes = NamedSql("list_context_changes")
    _tenants = NamedSql("list_revision_tenants")
    _get = NamedSql("get_revision")
    _delete_expired = NamedSql("delete_expired_revisions")
    _count_expired = NamedSql("count_expired_revisions")

    async def current_revision(self, conn: asyncpg.Connection) -> int:
        return int(await self._current.value(conn))

    async def revision_horizon(self, conn: asyncpg.Connection) -> Horizon:
        row = await self._horizon.one(conn)
        assert row is not None  # the table holds its one row from the migration on
        purged = int(row["purged_through"])
        oldest = row["oldest_kept"]
        return Horizon(purged, purged + 1 if oldest is None else int(oldest))

    async def list_context_changes(
        self,
        conn: asyncpg.Connection,
        *,
        root_id: UUID,
        scope_id: UUID | None,
        after: tuple[int, int],
        through_revision: int,
        page_size: int,
    ) -> list[LoggedChange]:
        rows = await self._changes.many(
            conn,
            root_id=str(root_id),
            scope_id=None if scope_id is None else str(scope_id),
            after_revision=after[0],
            after_idx=after[1],
            through_revision=through_revision,
            page_size=page_size,
        )
        return [LoggedChange(**row) for row in rows]

    async def list_revision_tenants(
        self, conn: asyncpg.Connection, revision: int
    ) -> list[RevisionTenant]:
        return await self._tenants.many_as(RevisionTenant, conn, revision=revision)

    async def get_revision(self, conn: asyncpg.Connection, revision: int) -> Revision | None:
        return await self._get.one_as(Revision, conn, revision=revision)

    async def delete_expired_revisions(
        self, conn: asyncpg.Connection, cutoff: datetime, batch_size: int
    ) -> int:
        return int(await self._delete_expired.value(conn, cutoff=cutoff, batch_size=batch_size))

    async def count_expired_revisions(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._count_expired.value(conn, cutoff=cutoff))
