"""Audit entries: filtered keyset pages, one entry, and the redaction a purge applies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository
from service.repositories.outbox import NewAuditEntry

REDACTED: dict[str, Any] = {"redacted": True}


@dataclass(frozen=True, slots=True)
class AuditEntryRow(NewAuditEntry):
    """A stored audit entry: what was written (the outbox's NewAuditEntry), and when."""

    created_at: datetime


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """The filters of GET /audit-logs; None means "any"."""

    action: str | None = None
    resource_type: str | None = None
    actor_id: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None


_FIELDS = tuple(f.name for f in fields(AuditEntryRow))


def _entry(row: asyncpg.Record) -> AuditEntryRow:
    return AuditEntryRow(**{name: row[name] for name in _FIELDS})


class AuditLogsRepository(Repository):
    _list = NamedSql("list_audit_logs")
    _list_tenant = NamedSql("list_tenant_audit_logs")
    _list_subtree = NamedSql("list_subtree_audit_logs")
    _get = NamedSql("get_audit_log")
    _redact = NamedSql("redact_audit_logs_of_tenants")

    async def list_audit_logs(
        self, conn: asyncpg.Connection, f: AuditFilter, *, cursor: UUID | None, limit: int
    ) -> list[AuditEntryRow]:
        rows = await self._list.many(
            conn,
            cursor_id=cursor,
            action=f.action,
            resource_type=f.resource_type,
            actor_id=f.actor_id,
            created_from=f.created_from,
            created_to=f.created_to,
            page_size=limit,
        )
        return [_entry(r) for r in rows]

    async def list_tenant_audit_logs(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        f: AuditFilter,
        *,
        cursor: UUID | None,
        limit: int | None,
    ) -> list[AuditEntryRow]:
        """One tenant's entries, newest first; limit None returns every one."""
        rows = await self._list_tenant.many(
            conn,
            tenant_id=tenant_id,
            cursor_id=cursor,
            action=f.action,
            resource_type=f.resource_type,
            actor_id=f.actor_id,
            created_from=f.created_from,
            created_to=f.created_to,
            page_size=limit,
        )
        return [_entry(r) for r in rows]

    async def list_subtree_audit_logs(
        self,
        conn: asyncpg.Connection,
        root_id: UUID,
        f: AuditFilter,
        *,
        cursor: UUID | None,
        limit: int,
    ) -> list[AuditEntryRow]:
        rows = await self._list_subtree.many(
            conn,
            root_id=root_id,
            cursor_id=cursor,
            action=f.action,
            resource_type=f.resource_type,
            actor_id=f.actor_id,
            created_from=f.created_from,
            created_to=f.created_to,
            page_size=limit,
        )
        return [_entry(r) for r in rows]

    async def get_audit_log(
        self, conn: asyncpg.Connection, entry_id: UUID
    ) -> tuple[AuditEntryRow, str | None] | None:
        """The entry and its tenant's current ancestry path (None: no tenant, or purged)."""
        row = await self._get.one(conn, entry_id=entry_id)
        return None if row is None else (_entry(row), row["ancestry_path"])

    async def redact_audit_logs_of_tenants(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> int:
        """Redact every entry naming one of these tenants (deleted already: migration
        0031's function refuses the entries of tenants that still exist)."""
        return int(await self._redact.value(conn, tenant_ids=list(tenant_ids)))
