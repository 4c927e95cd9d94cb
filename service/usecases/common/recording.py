"""The audit entries and events of a change, written in the change's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from uuid import UUID

import asyncpg

from service.auth.principal import Actor
from service.base.errors import RetryTransaction
from service.base.ids import uuid7
from service.repositories.outbox import NewAuditEntry, NewEvent, OutboxRepository
from service.views.base import opt_str


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    tenant_id: UUID | None
    data: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRecord:
    action: str
    resource_type: str
    resource_id: object | None
    tenant_id: UUID | None
    changes: dict[str, Any] | None = None


def tenant_audit(action: str, tenant_id: UUID, changes: dict[str, Any] | None) -> AuditRecord:
    """The audit entry of a change to a tenant itself: the resource and its tenant."""
    return AuditRecord(
        action=action,
        resource_type="tenant",
        resource_id=tenant_id,
        tenant_id=tenant_id,
        changes=changes,
    )


class Owned(Protocol):
    """A resource a tenant owns (None: the whole service's): a webhook, a role, a key."""

    @property
    def id(self) -> UUID: ...
    @property
    def tenant_id(self) -> UUID | None: ...


class ChangeRecorder:
    def __init__(self, outbox: OutboxRepository, *, webhook_max_attempts: int = 6) -> None:
        self.outbox = outbox
        self.webhook_max_attempts = webhook_max_attempts

    async def record_owned(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        action: str,
        resource_type: str,
        resource: Owned,
        changes: dict[str, Any] | None,
    ) -> None:
        """The audit entry of a change to `resource`, under its owner (no event)."""
        audit = AuditRecord(
            action=action,
            resource_type=resource_type,
            resource_id=resource.id,
            tenant_id=resource.tenant_id,
            changes=changes,
        )
        await self.record(conn, actor, audit)

    async def record(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        audit: AuditRecord | Sequence[AuditRecord],
        events: Sequence[Event] = (),
    ) -> None:
        """Audit entries (one per changed resource) and events, in the caller's transaction.

        Every change that emits goes through here. The same statement queues one delivery
        per matching active webhook, so a change never commits without its deliveries
        (transactional outbox).
        """
        records = [audit] if isinstance(audit, AuditRecord) else list(audit)
        entries = [
            NewAuditEntry(
                id=uuid7(),
                tenant_id=r.tenant_id,
                actor_id=actor.actor_id,
                actor_type=actor.actor_type,
                action=r.action,
                resource_type=r.resource_type,
                resource_id=opt_str(r.resource_id),
                changes=r.changes,
                request_id=actor.request_id,
                ip_address=actor.ip_address,
            )
            for r in records
        ]
        try:
            await self.outbox.insert_changes(
                conn,
                entries,
                [NewEvent(uuid7(), e.type, e.tenant_id, e.data) for e in events],
                max_attempts=self.webhook_max_attempts,
            )
        except asyncpg.ForeignKeyViolationError as exc:
            if getattr(exc, "constraint_name", None) == "webhook_deliveries_webhook_fk":
                # A matching webhook was deleted after this statement's snapshot: run the
                # change again so it fans out to the webhooks that exist now.
                raise RetryTransaction from exc
            raise
