"""Endpoints that heal (docs/decisions/webhooks.md "Endpoint health"): per-endpoint
statistics, disabling an endpoint that keeps failing, a fresh start when it is
re-enabled, and re-queuing its dead letters after an outage.

Every attempt's outcome is counted (webhook_health). An endpoint is disabled once its
deliveries have failed without a single success for WEBHOOK_DISABLE_AFTER_SECONDS
(default 5 days) or produced WEBHOOK_DISABLE_AFTER_DEAD_LETTERS dead letters (default
100; 0: never by count), and the failures are shared (`shared_failure`): in one
transaction the webhook becomes inactive with a reason, a `webhook.disabled` event goes
to the other endpoints subscribed to it, and the system writes a `webhook.disabled`
audit entry.

Failures are also counted per source (webhook_source_health): the part of the tree an
event came from, seen from the webhook's tenant. Whoever can write in one subtree below
the webhook's tenant can make that subtree's events fail (huge bodies a receiver
refuses), but not the others': so failures of one such source never disable an endpoint
that serves others (docs/decisions/webhooks.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import asyncpg

from service.auth.principal import SYSTEM_ACTOR, Actor, Principal
from service.base.errors import ServiceError
from service.base.timefmt import iso
from service.observability.logs import get_logger
from service.repositories.webhook_health import SourceStreak, Streak, WebhookHealthRow
from service.repositories.webhooks import WebhookRow, WebhookWrite
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.webhooks.access import visible_webhook

log = get_logger("service.webhooks")


def disable_reason(streak: Streak, *, after_seconds: int, after_dead_letters: int) -> str | None:
    """Why the endpoint must be disabled now, or None."""
    if streak.failing_since is None:
        return None
    failing = (streak.noted_at - streak.failing_since).total_seconds()
    if failing >= after_seconds:
        return (
            f"no delivery succeeded since {iso(streak.failing_since)} "
            f"(limit {after_seconds} seconds)"
        )
    if after_dead_letters and streak.dead_letters >= after_dead_letters:
        return (
            f"{streak.dead_letters} deliveries failed for good since "
            f"{iso(streak.failing_since)} without a success (limit {after_dead_letters})"
        )
    return None


def shared_failure(
    sources: Sequence[SourceStreak], *, after_seconds: int, after_dead_letters: int
) -> bool:
    """Whether the endpoint fails for more than whoever caused one source's failures:
    its own tenant's events fail (who writes there may switch the webhook off anyway),
    or at least two sources each reach a limit on their own."""
    if any(s.own for s in sources):
        return True
    reaching = [
        s
        for s in sources
        if disable_reason(
            s.streak, after_seconds=after_seconds, after_dead_letters=after_dead_letters
        )
        is not None
    ]
    return len(reaching) >= 2


def write_of(w: WebhookRow, *, active: bool) -> WebhookWrite:
    return WebhookWrite(
        url=w.url,
        events=w.events,
        description=w.description,
        active=active,
        include_descendants=w.include_descendants,
        encrypted_secret=w.encrypted_secret,
        previous_encrypted_secret=w.previous_encrypted_secret,
        previous_secret_expires_at=w.previous_secret_expires_at,
    )


class WebhookHealth:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db = deps.db
        self.health = deps.repos.webhook_health
        self.webhooks = deps.repos.webhooks

    async def of(self, webhook_ids: Sequence[UUID]) -> dict[UUID, WebhookHealthRow]:
        if not webhook_ids:
            return {}
        return await self.db.run(lambda c: self.health.list_health(c, webhook_ids))

    async def note_attempt(
        self, webhook_id: UUID, event_id: UUID, *, succeeded: bool, dead: bool
    ) -> None:
        """Count an attempt's outcome; disable the endpoint when its failures call for it."""
        streak = await self.db.run(
            lambda c: self.health.note_attempt(
                c, webhook_id, event_id, succeeded=succeeded, dead=dead
            )
        )
        s = self.deps.settings
        limits = {
            "after_seconds": s.webhook_disable_after_seconds,
            "after_dead_letters": s.webhook_disable_after_dead_letters,
        }
        reason = disable_reason(streak, **limits)
        if reason is None:
            return
        sources = await self.db.run(lambda c: self.health.failing_sources(c, webhook_id))
        if shared_failure(sources, **limits):
            await self.db.transaction(lambda c: self._disable(c, webhook_id, reason))
        else:
            log.info(
                "webhook kept enabled: its failures come from one source below it",
                webhook_id=str(webhook_id),
                sources=len(sources),
            )

    async def _disable(self, conn: asyncpg.Connection, webhook_id: UUID, reason: str) -> None:
        webhook = await self.webhooks.lock_webhook(conn, webhook_id)
        if webhook is None or not webhook.active:
            return  # deleted, or disabled meanwhile (by another worker or an admin)
        off = write_of(webhook, active=False)
        after = await self.webhooks.update_webhook(conn, webhook_id, off)
        await self.health.mark_disabled(conn, webhook_id, reason)
        data = {"webhook_id": str(webhook_id), "tenant_id": _opt(webhook.tenant_id),
                "reason": reason, "disabled_at": iso(after.updated_at)}  # fmt: skip
        await self.deps.recorder.record(
            conn,
            SYSTEM_ACTOR,
            AuditRecord(
                action="webhook.disabled",
                resource_type="webhook",
                resource_id=webhook_id,
                tenant_id=webhook.tenant_id,
                changes={"before": {"active": True}, "after": {"active": False}, "reason": reason},
            ),
            [Event("webhook.disabled", webhook.tenant_id, data)],
        )
        log.warning("webhook disabled", webhook_id=str(webhook_id), reason=reason)

    async def reset(self, conn: asyncpg.Connection, webhook_id: UUID) -> None:
        """Re-enabled by an admin (in the PATCH's transaction): a fresh start."""
        await self.health.reset_streak(conn, webhook_id)

    async def recover(
        self, principal: Principal, actor: Actor, webhook_id: UUID, since: datetime
    ) -> int:
        """Re-queue the endpoint's dead letters created since `since`."""

        async def work(conn: asyncpg.Connection) -> int:
            webhook = visible_webhook(principal, await self.webhooks.lock_webhook(conn, webhook_id))
            if not webhook.active:
                raise ServiceError(
                    "WEBHOOK_INACTIVE",
                    "the webhook is inactive; re-enable it (PATCH active: true) before "
                    "recovering its deliveries",
                )
            count = await self.health.requeue_failures(
                conn, webhook_id, since, self.deps.settings.webhook_max_attempts
            )
            if count:
                await self.deps.recorder.record(
                    conn,
                    actor,
                    AuditRecord(
                        action="webhook.recovered",
                        resource_type="webhook",
                        resource_id=webhook_id,
                        tenant_id=webhook.tenant_id,
                        changes={"since": iso(since), "requeued": count},
                    ),
                )
            return count

        return await self.db.transaction(work)


def _opt(value: object | None) -> str | None:
    return None if value is None else str(value)
