"""Webhook endpoint health: attempt statistics, the failure streak, recovery."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class WebhookHealthRow:
    webhook_id: UUID
    attempts_succeeded: int
    attempts_failed: int
    last_success_at: datetime | None
    last_failure_at: datetime | None
    failing_since: datetime | None
    dead_letters: int
    disabled_reason: str | None
    disabled_at: datetime | None


@dataclass(frozen=True, slots=True)
class Streak:
    failing_since: datetime | None
    dead_letters: int
    noted_at: datetime


@dataclass(frozen=True, slots=True)
class SourceStreak:
    """The failure streak of one source of an endpoint's events (own: its own tenant)."""

    source_id: UUID
    own: bool
    streak: Streak


class WebhookHealthRepository(Repository):
    _note = NamedSql("note_webhook_attempt")
    _list = NamedSql("list_webhook_health")
    _sources = NamedSql("list_failing_webhook_sources")
    _mark = NamedSql("mark_webhook_disabled")
    _reset = NamedSql("reset_webhook_streak")
    _requeue = NamedSql("requeue_webhook_failures")

    async def note_attempt(
        self,
        conn: asyncpg.Connection,
        webhook_id: UUID,
        event_id: UUID,
        *,
        succeeded: bool,
        dead: bool,
    ) -> Streak:
        row = await self._note.one(
            conn, webhook_id=webhook_id, event_id=event_id, succeeded=succeeded, dead=dead
        )
        assert row is not None  # an upsert returns its row
        return Streak(row["failing_since"], row["dead_letters"], row["noted_at"])

    async def failing_sources(
        self, conn: asyncpg.Connection, webhook_id: UUID
    ) -> list[SourceStreak]:
        rows = await self._sources.many(conn, webhook_id=webhook_id)
        return [
            SourceStreak(
                r["source_id"],
                r["own"],
                Streak(r["failing_since"], r["dead_letters"], r["noted_at"]),
            )
            for r in rows
        ]

    async def list_health(
        self, conn: asyncpg.Connection, webhook_ids: Sequence[UUID]
    ) -> dict[UUID, WebhookHealthRow]:
        rows = await self._list.many(conn, webhook_ids=list(webhook_ids))
        return {r["webhook_id"]: WebhookHealthRow(**r) for r in rows}

    async def mark_disabled(self, conn: asyncpg.Connection, webhook_id: UUID, reason: str) -> None:
        await self._mark.exec(conn, webhook_id=webhook_id, reason=reason)

    async def reset_streak(self, conn: asyncpg.Connection, webhook_id: UUID) -> None:
        await self._reset.exec(conn, webhook_id=webhook_id)

    async def requeue_failures(
        self, conn: asyncpg.Connection, webhook_id: UUID, since: datetime, max_attempts: int
    ) -> int:
        return int(
            await self._requeue.value(
                conn, webhook_id=webhook_id, since=since, max_attempts=max_attempts
            )
        )
