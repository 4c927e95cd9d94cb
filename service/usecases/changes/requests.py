"""Change requests: create (with the impact preview), read, list, submit a draft,
approve, reject, cancel (docs/change-requests.md). Applying is in applying.py.

A tenant-scoped caller sees, reviews and applies only requests whose tenants all lie
in its subtree; any other answers 404, as a tenant outside the subtree does. The
author never reviews its own request (the same key id or token subject).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError
from service.base.ids import uuid7
from service.base.timefmt import utcnow
from service.repositories.change_requests import (
    ChangeRequestRow,
    NewChangeRequest,
    Review,
    StateChange,
)
from service.schemas.change_requests import (
    ChangeRequestCreate,
    ListChangeRequestsQuery,
    change_document,
    change_of,
)
from service.usecases.changes.execution import ChangeExecution, changed_tenants
from service.usecases.changes.impact import digest
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.common.tenant_access import visible


@dataclass(frozen=True, slots=True)
class Shown:
    """A request with its reviews, as answers show it."""

    request: ChangeRequestRow
    reviews: list[Review]


@dataclass(frozen=True, slots=True)
class ShownPage:
    items: list[Shown]
    next_cursor: UUID | None
    has_more: bool


def not_found() -> ServiceError:
    return ServiceError("CHANGE_REQUEST_NOT_FOUND", "change request not found")


def wrong_state(request: ChangeRequestRow, doing: str) -> ServiceError:
    return ServiceError(
        "CHANGE_REQUEST_STATE", f"cannot {doing} a change request in state {request.state}"
    )


def event_data(request: ChangeRequestRow, **extra: Any) -> dict[str, Any]:
    return {"id": str(request.id), "title": request.title, "state": request.state, **extra}


async def record_transition(
    deps: Deps,
    conn: asyncpg.Connection,
    actor: Actor,
    request: ChangeRequestRow,
    action: str,
    changes: dict[str, Any],
    **extra: Any,
) -> None:
    """The audit entry and the change_request.* event of one transition. The event is
    sent as the first changed tenant's (webhooks of that tenant, or above with
    include_descendants, and global ones receive it)."""
    tenant_id = request.tenant_ids[0] if request.tenant_ids else None
    await deps.recorder.record(
        conn,
        actor,
        AuditRecord(
            action=action,
            resource_type="change_request",
            resource_id=request.id,
            tenant_id=tenant_id,
            changes=changes,
        ),
        [Event(action, tenant_id, event_data(request, **extra))],
    )


class ChangeRequests:
    def __init__(self, deps: Deps, execution: ChangeExecution) -> None:
        self.deps = deps
        self.repo = deps.repos.change_requests
        self.execution = execution

    async def create(self, principal: Principal, actor: Actor, body: ChangeRequestCreate) -> Shown:
        # The preview runs every change as the author would make it: a change the author
        # may not make (outside its subtree, under a lock, ...) fails here already.
        impact = await self.execution.preview(principal, actor, body.changes)
        new = NewChangeRequest(
            id=uuid7(),
            title=body.title,
            description=body.description,
            changes=[change_document(c) for c in body.changes],
            tenant_ids=changed_tenants(body.changes),
            state="draft" if body.draft else "pending_approval",
            author_id=principal.actor_id,
            author_type=principal.actor_type,
            author_scope=principal.tenant_id,
            author_scopes=sorted(principal.scopes),
            apply_at=body.apply_at,
            impact=impact,
            impact_digest=digest(impact),
        )

        async def work(conn: asyncpg.Connection) -> ChangeRequestRow:
            created = await self.repo.insert_change_request(conn, new)
            await record_transition(
                self.deps, conn, actor, created, "change_request.created",
                {"before": None, "after": {"state": created.state,
                                           "impact_digest": created.impact_digest}},
            )  # fmt: skip
            return created

        return Shown(await self.deps.db.transaction(work), [])

    async def get(self, principal: Principal, request_id: UUID) -> Shown:
        async with self.deps.db.connection() as conn:
            request = await self._visible(
                conn, principal, await self.repo.get_change_request(conn, request_id)
            )
            reviews = await self.repo.list_change_request_reviews(conn, request_id)
        return Shown(request, reviews)

    async def list_page(self, principal: Principal, query: ListChangeRequestsQuery) -> ShownPage:
        async with self.deps.db.connection() as conn:
            rows = await self.repo.list_change_requests(
                conn,
                cursor=query.cursor,
                state=query.state,
                author_id=query.author,
                scope_id=principal.tenant_id,
                page_size=query.limit + 1,
            )
            page = rows[: query.limit]
            items = [
                Shown(r, await self.repo.list_change_request_reviews(conn, r.id)) for r in page
            ]
        has_more = len(rows) > query.limit
        return ShownPage(items, page[-1].id if has_more and page else None, has_more)

    async def submit(self, principal: Principal, actor: Actor, request_id: UUID) -> Shown:
        """A draft goes to review, with its impact computed again."""
        current = await self.get(principal, request_id)
        self._author_only(principal, current.request, "submit")
        changes = [change_of(c) for c in current.request.changes]
        impact = await self.execution.preview(principal, actor, changes)

        async def work(conn: asyncpg.Connection) -> ChangeRequestRow:
            request = await self._locked(conn, principal, request_id)
            if request.state != "draft":
                raise wrong_state(request, "submit")
            after = await self.repo.update_change_request_state(
                conn, request.id,
                StateChange(state="pending_approval", impact=impact, impact_digest=digest(impact)),
            )  # fmt: skip
            await record_transition(
                self.deps, conn, actor, after, "change_request.submitted",
                {"before": {"state": "draft"}, "after": {"state": after.state}},
            )  # fmt: skip
            return after

        await self.deps.db.transaction(work)
        return await self.get(principal, request_id)

    async def review(
        self,
        principal: Principal,
        actor: Actor,
        request_id: UUID,
        *,
        approve: bool,
        comment: str | None,
    ) -> ChangeRequestRow:
        """Record an approval or a rejection; the request after it."""
        needed = self.deps.settings.change_request_approvals

        async def work(conn: asyncpg.Connection) -> ChangeRequestRow:
            request = await self._locked(conn, principal, request_id)
            if request.state != "pending_approval":
                raise wrong_state(request, "approve" if approve else "reject")
            if (principal.actor_id, principal.actor_type) == (
                request.author_id,
                request.author_type,
            ):
                raise ServiceError(
                    "SELF_APPROVAL", "the author of a change request cannot review it"
                )
            recorded = await self.repo.insert_change_request_review(
                conn, request,
                reviewer_id=principal.actor_id, reviewer_type=principal.actor_type,
                verdict="approved" if approve else "rejected", comment=comment,
            )  # fmt: skip
            if not recorded:
                raise ServiceError(
                    "ALREADY_APPROVED", "you have reviewed this change request already"
                )
            if approve:
                approvals = request.approvals + 1
                done = approvals >= needed
                after = await self.repo.update_change_request_state(
                    conn, request.id,
                    StateChange(state="approved" if done else "pending_approval",
                                approvals=approvals,
                                approved_digest=request.impact_digest if done else None),
                )  # fmt: skip
                action = "change_request.approved"
            else:
                after = await self.repo.update_change_request_state(
                    conn, request.id, StateChange(state="rejected", approvals=request.approvals)
                )
                action = "change_request.rejected"
            await record_transition(
                self.deps, conn, actor, after, action,
                {"before": {"state": request.state, "approvals": request.approvals},
                 "after": {"state": after.state, "approvals": after.approvals},
                 "comment": comment},
                approvals=after.approvals,
            )  # fmt: skip
            return after

        return await self.deps.db.transaction(work)

    async def cancel(self, principal: Principal, actor: Actor, request_id: UUID) -> Shown:
        async def work(conn: asyncpg.Connection) -> None:
            request = await self._locked(conn, principal, request_id)
            if (principal.actor_id, principal.actor_type) != (
                request.author_id,
                request.author_type,
            ) and not principal.has_scope("admin"):
                raise ServiceError(
                    "INSUFFICIENT_SCOPE", "only the author or an admin cancels a change request"
                )
            if request.state not in ("draft", "pending_approval", "approved"):
                raise wrong_state(request, "cancel")
            after = await self.repo.update_change_request_state(
                conn, request.id, StateChange(state="cancelled", approvals=request.approvals)
            )
            await record_transition(
                self.deps, conn, actor, after, "change_request.cancelled",
                {"before": {"state": request.state}, "after": {"state": "cancelled"}},
            )  # fmt: skip

        await self.deps.db.transaction(work)
        return await self.get(principal, request_id)

    def _author_only(self, principal: Principal, request: ChangeRequestRow, doing: str) -> None:
        if (principal.actor_id, principal.actor_type) != (request.author_id, request.author_type):
            raise ServiceError("INSUFFICIENT_SCOPE", f"only the author may {doing} it")

    async def _locked(
        self, conn: asyncpg.Connection, principal: Principal, request_id: UUID
    ) -> ChangeRequestRow:
        return await self._visible(
            conn, principal, await self.repo.lock_change_request(conn, request_id)
        )

    async def _visible(
        self, conn: asyncpg.Connection, principal: Principal, request: ChangeRequestRow | None
    ) -> ChangeRequestRow:
        if request is None:
            raise not_found()
        if principal.is_scoped:
            nodes = await self.deps.repos.tenants.get_tenant_nodes(conn, request.tenant_ids)
            for tenant_id in request.tenant_ids:
                try:
                    visible(principal, nodes.get(tenant_id))
                except ServiceError:
                    raise not_found() from None
        return request


def is_due(request: ChangeRequestRow) -> bool:
    return request.apply_at is not None and request.apply_at <= utcnow()
