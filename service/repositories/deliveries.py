"""Webhook deliveries: the workers' claims and results, and the API's reads and retries."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    id: UUID
    webhook_id: UUID
    event_id: UUID
    event_type: str
    status: str
    attempts: int
    max_attempts: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    last_response_code: int | None
    last_error: str | None
    lease_expires_at: datetime | None
    leased_by: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ScopedDelivery:
    """A delivery with what the scope check needs: its webhook's tenant and path."""

    delivery: DeliveryRow
    webhook_tenant_id: UUID | None
    tenant_path: str | None


@dataclass(frozen=True, slots=True)
class FailedDeliveryRow:
    """A dead letter with its webhook and event (the failed list)."""

    delivery: DeliveryRow
    webhook_url: str
    webhook_tenant_id: UUID | None
    event_tenant_id: UUID | None
    event_payload: dict[str, Any]
    event_created_at: datetime


@dataclass(frozen=True, slots=True)
class Claim:
    """A leased delivery and everything one attempt needs."""

    id: UUID
    attempts: int
    max_attempts: int
    lease_expires_at: datetime
    webhook_id: UUID
    url: str
    active: bool
    encrypted_secret: str
    previous_encrypted_secret: str | None
    previous_secret_expires_at: datetime | None
    event_id: UUID
    event_type: str
    payload: dict[str, Any]
    event_created_at: datetime


@dataclass(frozen=True, slots=True)
class DeliveryStatsRow:
    total: int
    pending: int
    success: int
    failed: int


_DELIVERY_FIELDS = frozenset(DeliveryRow.__dataclass_fields__)


def _delivery(row: asyncpg.Record) -> DeliveryRow:
    return DeliveryRow(**{k: v for k, v in row.items() if k in _DELIVERY_FIELDS})


class DeliveriesRepository(Repository):
    _claim = NamedSql("claim_due_deliveries")
    _next_due = NamedSql("seconds_until_next_delivery")
    _success = NamedSql("record_delivery_success")
    _failure = NamedSql("record_delivery_failure")
    _park = NamedSql("park_delivery")
    _release = NamedSql("release_delivery")
    _get = NamedSql("get_delivery")
    _list = NamedSql("list_webhook_deliveries")
    _stats = NamedSql("delivery_stats")
    _failed = NamedSql("list_failed_deliveries")
    _retry = NamedSql("retry_delivery")
    _retry_all = NamedSql("retry_failed_deliveries")

    async def claim_due_deliveries(
        self, conn: asyncpg.Connection, worker: str, limit: int, lease_seconds: float
    ) -> list[Claim]:
        rows = await self._claim.many(
            conn, worker=worker, batch_size=limit, lease_seconds=lease_seconds
        )
        return [Claim(**r) for r in rows]

    async def seconds_until_next_delivery(self, conn: asyncpg.Connection) -> float | None:
        value = await self._next_due.value(conn)
        return None if value is None else float(value)

    async def record_delivery_success(
        self, conn: asyncpg.Connection, claim: Claim, worker: str, *, seconds: float, code: int
    ) -> bool:
        done = await self._success.exec(
            conn,
            delivery_id=claim.id,
            worker=worker,
            duration_seconds=seconds,
            response_code=code,
            lease_expires_at=claim.lease_expires_at,
        )
        return bool(done.endswith(" 1"))

    async def record_delivery_failure(
        self,
        conn: asyncpg.Connection,
        claim: Claim,
        worker: str,
        *,
        seconds: float,
        code: int | None,
        error: str,
        retry_in: float,
    ) -> str | None:
        """The delivery's status afterwards, or None when the claim was no longer ours."""
        row = await self._failure.one(
            conn,
            delivery_id=claim.id,
            worker=worker,
            duration_seconds=seconds,
            response_code=code,
            error=error,
            retry_in_seconds=retry_in,
            lease_expires_at=claim.lease_expires_at,
        )
        return None if row is None else str(row["status"])

    async def park_delivery(
        self, conn: asyncpg.Connection, claim: Claim, worker: str, reason: str
    ) -> None:
        await self._park.exec(
            conn,
            delivery_id=claim.id,
            worker=worker,
            lease_expires_at=claim.lease_expires_at,
            reason=reason,
        )

    async def release_delivery(self, conn: asyncpg.Connection, claim: Claim, worker: str) -> None:
        await self._release.one(
            conn, delivery_id=claim.id, worker=worker, lease_expires_at=claim.lease_expires_at
        )

    async def get_delivery(
        self, conn: asyncpg.Connection, delivery_id: UUID
    ) -> ScopedDelivery | None:
        row = await self._get.one(conn, delivery_id=delivery_id)
        if row is None:
            return None
        return ScopedDelivery(_delivery(row), row["webhook_tenant_id"], row["tenant_path"])

    async def list_webhook_deliveries(
        self,
        conn: asyncpg.Connection,
        webhook_id: UUID,
        *,
        cursor: UUID | None,
        status: str | None,
        limit: int,
    ) -> list[DeliveryRow]:
        rows = await self._list.many(
            conn, webhook_id=webhook_id, cursor_id=cursor, status_filter=status, page_size=limit
        )
        return [_delivery(r) for r in rows]

    async def delivery_stats(
        self, conn: asyncpg.Connection, *, scope: UUID | None, webhook_id: UUID | None
    ) -> DeliveryStatsRow:
        row = await self._stats.one(conn, scope_tenant_id=scope, webhook_id=webhook_id)
        assert row is not None
        return DeliveryStatsRow(**row)

    async def list_failed_deliveries(
        self,
        conn: asyncpg.Connection,
        *,
        scope: UUID | None,
        webhook_id: UUID | None,
        cursor: UUID | None,
        limit: int,
    ) -> list[FailedDeliveryRow]:
        rows = await self._failed.many(
            conn, scope_tenant_id=scope, webhook_id=webhook_id, cursor_id=cursor, page_size=limit
        )
        return [
            FailedDeliveryRow(
                delivery=_delivery(r),
                webhook_url=r["webhook_url"],
                webhook_tenant_id=r["webhook_tenant_id"],
                event_tenant_id=r["event_tenant_id"],
                event_payload=r["event_payload"],
                event_created_at=r["event_created_at"],
            )
            for r in rows
        ]

    async def retry_delivery(
        self, conn: asyncpg.Connection, delivery_id: UUID, *, max_attempts: int
    ) -> DeliveryRow | None:
        """The delivery reset to pending, or None when it was not failed."""
        row = await self._retry.one(conn, delivery_id=delivery_id, max_attempts=max_attempts)
        return None if row is None else _delivery(row)

    async def retry_failed_deliveries(
        self,
        conn: asyncpg.Connection,
        *,
        scope: UUID | None,
        webhook_id: UUID | None,
        max_attempts: int,
    ) -> int:
        row = await self._retry_all.one(
            conn, scope_tenant_id=scope, webhook_id=webhook_id, max_attempts=max_attempts
        )
        assert row is not None
        return int(row["retried"])
