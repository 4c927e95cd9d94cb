"""Retention: counts for a dry run and bounded, keyset-paged deletes for the real one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository

NIL_UUID = UUID(int=0)
# Before any row: the first batch starts here.
EPOCH_START = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Position:
    """Where the last batch stopped: its newest (timestamp, id)."""

    at: datetime
    id: UUID


@dataclass(frozen=True, slots=True)
class RetentionBatchRow:
    deleted: int
    last: Position | None


@dataclass(frozen=True, slots=True)
class TenantCandidate:
    id: UUID
    ancestry_path: str


def _batch(rows: Sequence[asyncpg.Record]) -> RetentionBatchRow:
    if not rows:
        return RetentionBatchRow(0, None)
    last = max((r["at"], r["id"]) for r in rows)
    return RetentionBatchRow(len(rows), Position(last[0], last[1]))


class RetentionRepository(Repository):
    _count_deliveries = NamedSql("count_expired_deliveries")
    _delete_deliveries = NamedSql("delete_expired_deliveries")
    _count_events = NamedSql("count_expired_events")
    _delete_events = NamedSql("delete_expired_events")
    _count_consents = NamedSql("count_expired_consents")
    _delete_consents = NamedSql("delete_expired_consents")
    _count_audit = NamedSql("count_expired_audit_logs")
    _count_tenants = NamedSql("count_expired_archived_tenants")
    _find_leaves = NamedSql("find_expired_archived_leaves")
    _lock_leaves = NamedSql("lock_expired_archived_leaves")
    _count_idempotency = NamedSql("count_expired_idempotency_keys")
    _delete_idempotency = NamedSql("delete_expired_idempotency_keys")

    @staticmethod
    def _page(after: Position | None) -> Position:
        return after or Position(EPOCH_START, NIL_UUID)

    async def count_expired_deliveries(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._count_deliveries.value(conn, cutoff=cutoff))

    async def delete_expired_deliveries(
        self, conn: asyncpg.Connection, cutoff: datetime, limit: int, after: Position | None
    ) -> RetentionBatchRow:
        start = self._page(after)
        rows = await self._delete_deliveries.many(
            conn, cutoff=cutoff, batch_size=limit, after_at=start.at, after_id=start.id
        )
        return _batch(rows)

    async def count_expired_events(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._count_events.value(conn, cutoff=cutoff))

    async def delete_expired_events(
        self, conn: asyncpg.Connection, cutoff: datetime, limit: int, after: Position | None
    ) -> RetentionBatchRow:
        start = self._page(after)
        rows = await self._delete_events.many(
            conn, cutoff=cutoff, batch_size=limit, after_at=start.at, after_id=start.id
        )
        return _batch(rows)

    async def count_expired_consents(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._count_consents.value(conn, cutoff=cutoff))

    async def delete_expired_consents(
        self, conn: asyncpg.Connection, cutoff: datetime, limit: int, after: Position | None
    ) -> RetentionBatchRow:
        start = self._page(after)
        rows = await self._delete_consents.many(
            conn, cutoff=cutoff, batch_size=limit, after_at=start.at, after_id=start.id
        )
        return _batch(rows)

    async def count_expired_audit_logs(self, conn: asyncpg.Connection, cutoff: datetime) -> int:
        return int(await self._count_audit.value(conn, cutoff=cutoff))

    async def count_expired_idempotency_keys(
        self, conn: asyncpg.Connection, cutoff: datetime
    ) -> int:
        return int(await self._count_idempotency.value(conn, cutoff=cutoff))

    async def delete_expired_idempotency_keys(
        self, conn: asyncpg.Connection, cutoff: datetime, limit: int, after: Position | None
    ) -> RetentionBatchRow:
        start = self._page(after)
        rows = await self._delete_idempotency.many(
            conn, cutoff=cutoff, batch_size=limit, after_at=start.at, after_id=start.id
        )
        return _batch(rows)

    async def count_expired_archived_tenants(
        self, conn: asyncpg.Connection, cutoff: datetime
    ) -> int:
        return int(await self._count_tenants.value(conn, cutoff=cutoff))

    async def find_expired_archived_leaves(
        self, conn: asyncpg.Connection, cutoff: datetime, limit: int
    ) -> list[TenantCandidate]:
        rows = await self._find_leaves.many(conn, cutoff=cutoff, batch_size=limit)
        return [TenantCandidate(r["id"], r["ancestry_path"]) for r in rows]

    async def lock_expired_archived_leaves(
        self, conn: asyncpg.Connection, cutoff: datetime, ids: Sequence[UUID]
    ) -> list[TenantCandidate]:
        rows = await self._lock_leaves.many(conn, cutoff=cutoff, tenant_ids=list(ids))
        return [TenantCandidate(r["id"], r["ancestry_path"]) for r in rows]
