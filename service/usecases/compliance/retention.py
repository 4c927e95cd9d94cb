"""POST /maintenance/purge-expired: remove what the retention settings allow.

Each kind of row is removed in bounded batches, each batch its own short transaction,
keyset-paged from where the previous one stopped, so a large purge never holds long
locks. The cutoffs are fixed when the request starts, so a dry run (counts only, one
snapshot) reports what the real run removes. A retention of 0 days means "keep forever".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import RetryTransaction, ServiceError
from service.base.timefmt import iso, utcnow
from service.caches.key_cache import KeyCache
from service.repositories.gdpr import PurgedRows
from service.repositories.retention import Position, RetentionBatchRow
from service.repositories.tenants import root_of
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord
from service.usecases.compliance.audit_retention import purge_audit_batch
from service.usecases.compliance.purging import (
    forget_credentials,
    purge_tenant_rows,
    purged_record,
)

DEFAULT_BATCH_SIZE = 1000
# Archived tenants are purged with everything they own: smaller batches.
DEFAULT_TENANT_BATCH_SIZE = 100
CATEGORIES = (
    "audit_logs",
    "webhook_deliveries",
    "events",
    "consents",
    "archived_tenants",
    "idempotency_keys",
    "context_revisions",
    "context_history",
)
# Idempotency-Key answers are replayed for 24 hours (service/usecases/common/idempotency.py).
IDEMPOTENCY_KEY_LIFETIME = timedelta(hours=24)

DeleteBatch = Callable[
    [asyncpg.Connection, datetime, int, Position | None], Awaitable[RetentionBatchRow]
]


@dataclass(slots=True)
class Progress:
    """What a run removed so far, and in how many batches (each its own transaction)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    batches: int = 0


def _bound(
    delete: DeleteBatch, cutoff: datetime, limit: int, after: Position | None
) -> Callable[[asyncpg.Connection], Awaitable[RetentionBatchRow]]:
    """One batch as a transaction body (fixed arguments, fresh connection)."""

    def run(conn: asyncpg.Connection) -> Awaitable[RetentionBatchRow]:
        return delete(conn, cutoff, limit, after)

    return run


class Retention:
    def __init__(
        self,
        deps: Deps,
        cache: KeyCache,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        tenant_batch_size: int = DEFAULT_TENANT_BATCH_SIZE,
    ) -> None:
        self.deps = deps
        self.cache = cache
        self.repo = deps.repos.retention
        self.batch_size = batch_size
        self.tenant_batch_size = tenant_batch_size

    def cutoffs(self, now: datetime) -> dict[str, datetime | None]:
        s = self.deps.settings

        def before(days: int) -> datetime | None:
            return None if days == 0 else now - timedelta(days=days)

        # Events follow their deliveries: the outbox keeps an event as long as deliveries.
        deliveries = before(s.delivery_retention_days)
        return {
            "audit_logs": before(s.audit_log_retention_days),
            "webhook_deliveries": deliveries,
            "events": deliveries,
            "consents": before(s.consent_retention_days),
            "archived_tenants": before(s.archived_tenant_retention_days),
            "idempotency_keys": now - IDEMPOTENCY_KEY_LIFETIME,
            "context_revisions": before(s.revision_retention_days),
            "context_history": before(s.history_retention_days),
        }

    async def purge_expired(
        self, principal: Principal, actor: Actor, *, dry_run: bool
    ) -> dict[str, Any]:
        if principal.is_scoped:
            raise ServiceError(
                "TENANT_ACCESS_DENIED", "retention is global; a tenant-scoped caller cannot run it"
            )
        cutoffs = self.cutoffs(utcnow())
        if dry_run:
            return {"dry_run": True, **await self._count(cutoffs)}
        progress = Progress()
        completed = False
        try:
            await self._run(actor, cutoffs, progress)
            completed = True
        finally:
            await self._record(actor, cutoffs, progress, completed)
        return {"dry_run": False, **progress.counts}

    async def _count(self, cutoffs: dict[str, datetime | None]) -> dict[str, int]:
        repo = self.repo
        counters = {
            "audit_logs": repo.count_expired_audit_logs,
            "webhook_deliveries": repo.count_expired_deliveries,
            "events": repo.count_expired_events,
            "consents": repo.count_expired_consents,
            "archived_tenants": repo.count_expired_archived_tenants,
            "idempotency_keys": repo.count_expired_idempotency_keys,
            "context_revisions": self.deps.repos.revisions.count_expired_revisions,
            "context_history": self.deps.repos.history.count_expired_history,
        }

        async def work(conn: asyncpg.Connection) -> dict[str, int]:
            counts: dict[str, int] = {}
            for category in CATEGORIES:
                cutoff = cutoffs[category]
                counts[category] = 0 if cutoff is None else await counters[category](conn, cutoff)
            return counts

        # One snapshot for every count; read-only, so it holds no locks.
        return await self.deps.db.transaction(work, isolation="repeatable_read")

    async def _run(
        self, actor: Actor, cutoffs: dict[str, datetime | None], progress: Progress
    ) -> None:
        # Deliveries before events: an event goes only once no delivery refers to it.
        steps: tuple[tuple[str, DeleteBatch], ...] = (
            ("webhook_deliveries", self.repo.delete_expired_deliveries),
            ("events", self.repo.delete_expired_events),
            ("consents", self.repo.delete_expired_consents),
            ("audit_logs", self._audit_batch(actor)),
            ("idempotency_keys", self.repo.delete_expired_idempotency_keys),
            ("context_revisions", self._revision_batch),
            ("context_history", self._history_batch),
        )
        for category, delete in steps:
            cutoff = cutoffs[category]
            if cutoff is not None:
                await self._drain(category, delete, cutoff, progress)
        tenants_cutoff = cutoffs["archived_tenants"]
        if tenants_cutoff is not None:
            while True:
                purged = await self.deps.db.transaction(
                    lambda conn: self._purge_archived_batch(conn, actor, tenants_cutoff)
                )
                if purged is None:
                    break
                forget_credentials(self.cache, purged)
                progress.counts["archived_tenants"] += purged.counts["tenants"]
                progress.batches += 1

    async def _revision_batch(
        self, conn: asyncpg.Connection, cutoff: datetime, limit: int, _after: Position | None
    ) -> RetentionBatchRow:
        """The oldest expired revisions (always keeping the newest), the horizon moved
        past them; each batch starts again from the oldest left."""
        revisions = self.deps.repos.revisions
        return RetentionBatchRow(
            await revisions.delete_expired_revisions(conn, cutoff, limit), None
        )

    async def _history_batch(
        self, conn: asyncpg.Connection, cutoff: datetime, _limit: int, _after: Position | None
    ) -> RetentionBatchRow:
        """The history before the newest revision committed before the cutoff, in one
        statement (the next call finds nothing left and ends the drain)."""
        return RetentionBatchRow(
            await self.deps.repos.history.delete_expired_history(conn, cutoff), None
        )

    def _audit_batch(self, actor: Actor) -> DeleteBatch:
        def run(
            conn: asyncpg.Connection, cutoff: datetime, limit: int, after: Position | None
        ) -> Awaitable[RetentionBatchRow]:
            return purge_audit_batch(self.deps, conn, actor, cutoff, limit, after)

        return run

    async def _drain(
        self, category: str, delete: DeleteBatch, cutoff: datetime, progress: Progress
    ) -> None:
        after: Position | None = None
        while True:
            batch = await self.deps.db.transaction(_bound(delete, cutoff, self.batch_size, after))
            if batch.deleted == 0:
                return
            progress.counts[category] += batch.deleted
            progress.batches += 1
            after = batch.last

    async def _purge_archived_batch(
        self, conn: asyncpg.Connection, actor: Actor, cutoff: datetime
    ) -> PurgedRows | None:
        """Purge up to one batch of expired archived tenants without children (a parent
        becomes childless, and goes, in a later batch); None when none is left."""
        found = await self.repo.find_expired_archived_leaves(conn, cutoff, self.tenant_batch_size)
        if not found:
            return None
        roots = sorted({root_of(c.ancestry_path) for c in found})
        await self.deps.repos.tenants.lock_tree_roots_exclusive(conn, roots)
        locked = await self.repo.lock_expired_archived_leaves(conn, cutoff, [c.id for c in found])
        if any(root_of(c.ancestry_path) not in roots for c in locked):
            raise RetryTransaction  # a move changed a tree before we locked it
        if not locked:
            return None
        ids = [c.id for c in locked]
        purged = await purge_tenant_rows(conn, self.deps.repos, ids)
        changes = {"reason": "retention", "cascade": False}
        await self.deps.recorder.record(
            conn, actor, [purged_record(tenant_id, changes) for tenant_id in ids]
        )
        return purged

    async def _record(
        self,
        actor: Actor,
        cutoffs: dict[str, datetime | None],
        progress: Progress,
        completed: bool,
    ) -> None:
        changes = {
            "dry_run": False,
            "completed": completed,
            "counts": progress.counts,
            "batches": progress.batches,
            "cutoffs": {k: None if v is None else iso(v) for k, v in cutoffs.items()},
        }

        async def work(conn: asyncpg.Connection) -> None:
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action="maintenance.purge_expired",
                    resource_type="maintenance",
                    resource_id=None,
                    tenant_id=None,
                    changes=changes,
                ),
            )

        await self.deps.db.transaction(work)
