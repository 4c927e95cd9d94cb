"""Deliveries through the API: history, statistics, dead letters and retries.

Retry and retry-all reset attempts, make the delivery due at once and wake the
workers (NOTIFY in the same statement). Retry-all writes one audit entry for the
request with the count; a retry that changes nothing records nothing.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.repositories.deliveries import DeliveryRow, DeliveryStatsRow, FailedDeliveryRow
from service.schemas.webhooks import DeliveriesQuery, FailedDeliveriesQuery
from service.usecases.common.deps import Deps
from service.usecases.common.pages import Page, page_of
from service.usecases.common.recording import AuditRecord
from service.usecases.webhooks.access import can_see, delivery_not_found, visible_webhook


class DeliveryAdmin:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db = deps.db
        self.webhooks = deps.repos.webhooks
        self.deliveries = deps.repos.deliveries

    async def _check_webhook(
        self, conn: asyncpg.Connection, principal: Principal, webhook_id: UUID | None
    ) -> None:
        if webhook_id is not None:
            visible_webhook(principal, await self.webhooks.get_webhook(conn, webhook_id))

    async def history(
        self, principal: Principal, webhook_id: UUID, query: DeliveriesQuery
    ) -> Page[DeliveryRow]:
        async with self.db.read_connection() as conn:
            await self._check_webhook(conn, principal, webhook_id)
            rows = await self.deliveries.list_webhook_deliveries(
                conn, webhook_id, cursor=query.cursor, status=query.status, limit=query.limit + 1
            )
        return Page(*page_of(rows, query.limit, lambda row: row.id))

    async def stats(self, principal: Principal, webhook_id: UUID | None) -> DeliveryStatsRow:
        async with self.db.read_connection() as conn:
            await self._check_webhook(conn, principal, webhook_id)
            return await self.deliveries.delivery_stats(
                conn, scope=principal.tenant_id, webhook_id=webhook_id
            )

    async def failed(
        self, principal: Principal, query: FailedDeliveriesQuery
    ) -> tuple[list[FailedDeliveryRow], UUID | None]:
        """A page of dead letters, newest first, and the cursor of the next page."""
        async with self.db.read_connection() as conn:
            await self._check_webhook(conn, principal, query.webhook_id)
            rows = await self.deliveries.list_failed_deliveries(
                conn,
                scope=principal.tenant_id,
                webhook_id=query.webhook_id,
                cursor=query.cursor,
                limit=query.limit + 1,
            )
        if len(rows) > query.limit:
            return rows[: query.limit], rows[query.limit - 1].delivery.id
        return rows, None

    async def retry(self, principal: Principal, actor: Actor, delivery_id: UUID) -> bool:
        """True when the delivery was failed and is pending again; False when not failed."""

        async def work(conn: asyncpg.Connection) -> bool:
            found = await self.deliveries.get_delivery(conn, delivery_id)
            if found is None or not can_see(principal, found.tenant_path):
                raise delivery_not_found()
            retried = await self.deliveries.retry_delivery(
                conn, delivery_id, max_attempts=self.deps.settings.webhook_max_attempts
            )
            if retried is None:
                return False
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action="delivery.retried",
                    resource_type="delivery",
                    resource_id=delivery_id,
                    tenant_id=found.webhook_tenant_id,
                    changes={
                        "before": {"status": "failed", "attempts": found.delivery.attempts},
                        "after": {"status": "pending", "attempts": 0},
                    },
                ),
            )
            return True

        return await self.db.transaction(work)

    async def retry_all(self, principal: Principal, actor: Actor, webhook_id: UUID | None) -> int:
        async def work(conn: asyncpg.Connection) -> int:
            await self._check_webhook(conn, principal, webhook_id)
            count = await self.deliveries.retry_failed_deliveries(
                conn,
                scope=principal.tenant_id,
                webhook_id=webhook_id,
                max_attempts=self.deps.settings.webhook_max_attempts,
            )
            if count:
                await self.deps.recorder.record(
                    conn,
                    actor,
                    AuditRecord(
                        action="delivery.retried",
                        resource_type="delivery",
                        resource_id=None,
                        tenant_id=principal.tenant_id,
                        changes={
                            "retried": count,
                            "webhook_id": None if webhook_id is None else str(webhook_id),
                        },
                    ),
                )
            return count

        return await self.db.transaction(work)
