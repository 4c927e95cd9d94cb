"""History of the resolved view (migration 0044): the kept horizon, revisions by time,
contexts and tenants as they were at a revision, and retention."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository
from service.repositories.context import RenderedContext
from service.repositories.tenants import TenantRow


@dataclass(frozen=True, slots=True)
class HistoryBoundsRow:
    """The oldest revision the history answers and since when, the newest committed one,
    and the last revision committed at or before the time asked (None: none kept)."""

    kept_from: int
    kept_since: datetime
    newest: int
    at_revision: int | None


@dataclass(frozen=True, slots=True)
class ContextAtRow:
    """The bounds of the kept history, with at_revision the revision the moment named
    (as history_bounds resolves it), and the context then (None: the tenant did not
    exist)."""

    bounds: HistoryBoundsRow
    context: RenderedContext | None


@dataclass(frozen=True, slots=True)
class HistoryRevisionRow:
    revision: int
    committed_at: datetime
    audit_ids: list[UUID]


@dataclass(frozen=True, slots=True)
class EntryChangeRow:
    """What a revision did to one config entry or permission policy (before/after as
    stored in the history, None: absent), and the later revisions that changed it."""

    kind: str
    tenant_id: UUID
    key: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    later_revisions: list[int]
    path_now: str | None


def _with_moments(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """An entry as the history stored it, its expires_at (timestamptz as jsonb renders
    it; versions recorded before migration 0046 have none) read as a datetime."""
    if entry is None:
        return None
    expires = entry.get("expires_at")
    return entry | {"expires_at": None if expires is None else datetime.fromisoformat(expires)}


class HistoryRepository(Repository):
    _bounds = NamedSql("history_bounds")
    _context_at = NamedSql("render_tenant_context_at")
    _tenant_at = NamedSql("get_tenant_at")
    _change_revisions = NamedSql("list_context_change_revisions")
    _revision = NamedSql("get_history_revision")
    _delete_expired = NamedSql("delete_expired_history")
    _count_expired = NamedSql("count_expired_history")
    _entry_changes = NamedSql("list_revision_entry_changes")
    _tenant_changes = NamedSql("count_revision_tenant_changes")
    _restore_config = NamedSql("restore_config_entry")
    _restore_permission = NamedSql("restore_permission_policy")
    _remove_config = NamedSql("remove_config_entry")
    _remove_permission = NamedSql("remove_permission_policy")
    _later_moves = NamedSql("list_later_moves")

    async def list_later_moves(
        self, conn: asyncpg.Connection, tenant_ids: list[UUID], revision: int
    ) -> dict[UUID, list[int]]:
        """Per tenant, the revisions after `revision` that moved it."""
        moves: dict[UUID, list[int]] = {}
        for row in await self._later_moves.many(conn, tenant_ids=tenant_ids, revision=revision):
            moves.setdefault(row["tenant_id"], []).append(int(row["revision"]))
        return moves

    async def list_revision_entry_changes(
        self, conn: asyncpg.Connection, revision: int
    ) -> list[EntryChangeRow]:
        rows = await self._entry_changes.many(conn, revision=revision)
        return [
            EntryChangeRow(
                **(dict(row) | {"before": _with_moments(row["before"]),
                                "after": _with_moments(row["after"])})
            )
            for row in rows
        ]  # fmt: skip

    async def count_revision_tenant_changes(self, conn: asyncpg.Connection, revision: int) -> int:
        return int(await self._tenant_changes.value(conn, revision=revision))

    async def put_back(self, conn: asyncpg.Connection, change: EntryChangeRow) -> None:
        """The entry as it was before the revision (removed if it did not exist)."""
        old = change.before
        if change.kind == "config":
            if old is None:
                await self._remove_config.exec(conn, tenant_id=change.tenant_id, key=change.key)
                return
            await self._restore_config.exec(
                conn,
                tenant_id=change.tenant_id,
                key=change.key,
                value=old["value"],
                encrypted_value=old["encrypted_value"],
                locked=old["locked"],
                sensitive=old["sensitive"],
                reveal_to_descendants=old["reveal_to_descendants"],
                expires_at=old["expires_at"],
            )
            return
        if old is None:
            await self._remove_permission.exec(conn, tenant_id=change.tenant_id, key=change.key)
            return
        await self._restore_permission.exec(
            conn,
            tenant_id=change.tenant_id,
            key=change.key,
            value=old["value"],
            mode=old["mode"],
            expires_at=old["expires_at"],
        )

    async def history_bounds(self, conn: asyncpg.Connection, at: datetime) -> HistoryBoundsRow:
        row = await self._bounds.one(conn, at=at)
        assert row is not None  # the horizon holds its one row from the migration on
        return HistoryBoundsRow(**row)

    async def render_tenant_context_at(
        self, conn: asyncpg.Connection, tenant_id: UUID, revision: int
    ) -> RenderedContext | None:
        """The context at a revision already checked against the bounds."""
        return (await self.render_tenant_context_at_moment(conn, tenant_id, revision)).context

    async def render_tenant_context_at_moment(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        revision: int | None,
        at: datetime | None = None,
    ) -> ContextAtRow:
        """The bounds, the revision a moment names and the context then, in one
        statement."""
        row = await self._context_at.one(conn, tenant_id=tenant_id, revision=revision, at=at)
        assert row is not None  # the horizon holds its one row from the migration on
        bounds = HistoryBoundsRow(
            kept_from=row["kept_from"],
            kept_since=row["kept_since"],
            newest=row["newest"],
            at_revision=row["revision"],
        )
        context = None
        if row["id"] is not None:
            context = RenderedContext(
                id=row["id"], ancestry_path=row["ancestry_path"], depth=row["depth"],
                status=row["status"], document=row["document"],
            )  # fmt: skip
        return ContextAtRow(bounds=bounds, context=context)

    async def get_tenant_at(
        self, conn: asyncpg.Connection, tenant_id: UUID, revision: int
    ) -> TenantRow | None:
        return await self._tenant_at.one_as(TenantRow, conn, tenant_id=tenant_id, revision=revision)

    async def list_context_change_revisions(
        self, conn: asyncpg.Connection, tenant_id: UUID, from_revision: int, to_revision: int
    ) -> list[int]:
        rows = await self._change_revisions.many(
            conn, tenant_id=tenant_id, from_revision=from_revision, to_revision=to_revision
        )
        return [int(r["revision"]) for r in rows]

    async def get_history_revision(
        self, conn: asyncpg.Connection, revision: int
    ) -> HistoryRevisionRow | None:
        return await self._revision.one_as(HistoryRevisionRow, conn, revision=revision)

    async def delete_expired_history(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._delete_expired.value(conn, cutoff=cutoff))

    async def count_expired_history(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._count_expired.value(conn, cutoff=cutoff))
