"""Change requests and their reviews (migration 0043)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class NewChangeRequest:
    id: UUID
    title: str
    description: str
    changes: list[dict[str, Any]]
    tenant_ids: list[UUID]
    state: str
    author_id: str
    author_type: str
    author_scope: UUID | None
    author_scopes: list[str]
    apply_at: datetime | None
    impact: list[dict[str, Any]]
    impact_digest: str


@dataclass(frozen=True, slots=True)
class ChangeRequestRow(NewChangeRequest):
    """A stored change request: what was proposed, then its reviews and outcome."""

    review_round: int
    approvals: int
    approved_digest: str | None
    revision: int | None
    error: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime
    applied_at: datetime | None


@dataclass(frozen=True, slots=True)
class Review:
    review_round: int
    reviewer_id: str
    reviewer_type: str
    verdict: str
    comment: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class StateChange:
    state: str
    approvals: int = 0
    approved_digest: str | None = None
    next_round: bool = False
    impact: list[dict[str, Any]] | None = None
    impact_digest: str | None = None
    revision: int | None = None
    error: dict[str, Any] | None = None


def _row(row: asyncpg.Record) -> ChangeRequestRow:
    return ChangeRequestRow(**row)


class ChangeRequestsRepository(Repository):
    _insert = NamedSql("insert_change_request")
    _get = NamedSql("get_change_request")
    _lock = NamedSql("lock_change_request")
    _claim_due = NamedSql("claim_due_change_request")
    _claim_missed = NamedSql("claim_missed_change_requests")
    _update_state = NamedSql("update_change_request_state")
    _set_revision = NamedSql("set_change_request_revision")
    _insert_review = NamedSql("insert_change_request_review")
    _reviews = NamedSql("list_change_request_reviews")
    _list = NamedSql("list_change_requests")
    _subtree_ids = NamedSql("list_subtree_tenant_ids")
    _applied_revision = NamedSql("find_applied_revision")

    async def insert_change_request(
        self, conn: asyncpg.Connection, new: NewChangeRequest
    ) -> ChangeRequestRow:
        row = await self._insert.one(
            conn,
            id=new.id,
            title=new.title,
            description=new.description,
            changes=new.changes,
            tenant_ids=new.tenant_ids,
            state=new.state,
            author_id=new.author_id,
            author_type=new.author_type,
            author_scope=new.author_scope,
            author_scopes=new.author_scopes,
            apply_at=new.apply_at,
            impact=new.impact,
            impact_digest=new.impact_digest,
        )
        assert row is not None
        return _row(row)

    async def get_change_request(
        self, conn: asyncpg.Connection, request_id: UUID
    ) -> ChangeRequestRow | None:
        return await self._get.one_as(ChangeRequestRow, conn, id=request_id)

    async def lock_change_request(
        self, conn: asyncpg.Connection, request_id: UUID
    ) -> ChangeRequestRow | None:
        return await self._lock.one_as(ChangeRequestRow, conn, id=request_id)

    async def claim_due_change_request(
        self, conn: asyncpg.Connection, grace_seconds: int
    ) -> ChangeRequestRow | None:
        return await self._claim_due.one_as(ChangeRequestRow, conn, grace_seconds=grace_seconds)

    async def claim_missed_change_requests(
        self, conn: asyncpg.Connection, grace_seconds: int
    ) -> list[ChangeRequestRow]:
        return await self._claim_missed.many_as(ChangeRequestRow, conn, grace_seconds=grace_seconds)

    async def update_change_request_state(
        self, conn: asyncpg.Connection, request_id: UUID, change: StateChange
    ) -> ChangeRequestRow:
        row = await self._update_state.one(
            conn,
            id=request_id,
            state=change.state,
            approvals=change.approvals,
            approved_digest=change.approved_digest,
            next_round=change.next_round,
            impact=change.impact,
            impact_digest=change.impact_digest,
            revision=change.revision,
            error=change.error,
        )
        assert row is not None
        return _row(row)

    async def set_change_request_revision(
        self, conn: asyncpg.Connection, request_id: UUID, revision: int
    ) -> None:
        await self._set_revision.exec(conn, id=request_id, revision=revision)

    async def insert_change_request_review(
        self,
        conn: asyncpg.Connection,
        request: ChangeRequestRow,
        *,
        reviewer_id: str,
        reviewer_type: str,
        verdict: str,
        comment: str | None,
    ) -> bool:
        """Whether the verdict was recorded (False: this reviewer gave one this round)."""
        row = await self._insert_review.one(
            conn,
            change_request_id=request.id,
            review_round=request.review_round,
            reviewer_id=reviewer_id,
            reviewer_type=reviewer_type,
            verdict=verdict,
            comment=comment,
        )
        return row is not None

    async def list_change_request_reviews(
        self, conn: asyncpg.Connection, request_id: UUID
    ) -> list[Review]:
        return await self._reviews.many_as(Review, conn, change_request_id=request_id)

    async def list_change_requests(
        self,
        conn: asyncpg.Connection,
        *,
        cursor: UUID | None,
        state: str | None,
        author_id: str | None,
        scope_id: UUID | None,
        page_size: int,
    ) -> list[ChangeRequestRow]:
        return await self._list.many_as(
            ChangeRequestRow,
            conn,
            cursor=cursor,
            state=state,
            author_id=author_id,
            scope_id=None if scope_id is None else str(scope_id),
            page_size=page_size,
        )

    async def list_subtree_tenant_ids(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID], max_rows: int
    ) -> list[UUID]:
        rows = await self._subtree_ids.many(conn, tenant_ids=list(tenant_ids), max_rows=max_rows)
        return [r["id"] for r in rows]

    async def find_applied_revision(self, conn: asyncpg.Connection, request_id: UUID) -> int | None:
        found: int | None = await self._applied_revision.value(conn, id=str(request_id))
        return found
