"""Events (the outbox, with their webhook deliveries) and audit entries, written inside
the change's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class NewEvent:
    id: UUID
    type: str
    tenant_id: UUID | None
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NewAuditEntry:
    id: UUID
    tenant_id: UUID | None
    actor_id: str
    actor_type: str
    action: str
    resource_type: str
    resource_id: str | None
    changes: dict[str, Any] | None
    request_id: str | None
    ip_address: str | None


class OutboxRepository(Repository):
    _insert_changes = NamedSql("insert_changes")

    async def insert_changes(
        self,
        conn: asyncpg.Connection,
        entries: Sequence[NewAuditEntry],
        events: Sequence[NewEvent],
        *,
        max_attempts: int,
    ) -> int:
        """Store audit entries and events and queue the events' webhook deliveries, in one
        statement; returns how many deliveries were queued."""
        if not entries and not events:
            return 0
        queued: int = await self._insert_changes.value(
            conn,
            entry_ids=[e.id for e in entries],
            entry_tenant_ids=[e.tenant_id for e in entries],
            actor_ids=[e.actor_id for e in entries],
            actor_types=[e.actor_type for e in entries],
            actions=[e.action for e in entries],
            resource_types=[e.resource_type for e in entries],
            resource_ids=[e.resource_id for e in entries],
            changes=[e.changes for e in entries],
            request_ids=[e.request_id for e in entries],
            ip_addresses=[e.ip_address for e in entries],
            event_ids=[e.id for e in events],
            event_types=[e.type for e in events],
            event_tenant_ids=[e.tenant_id for e in events],
            payloads=[e.payload for e in events],
            max_attempts=max_attempts,
        )
        return queued
