"""Applying a change request: by POST .../apply, or by the scheduler at apply_at.

The whole list runs in ONE transaction (service/usecases/changes/execution.py) that
first locks the request's row and checks it is approved: two appliers (two processes,
a scheduler and a click) take turns on that lock and the second finds it applied. The
scheduler claims with FOR UPDATE SKIP LOCKED instead, so processes never wait on one
another; a process that dies mid-apply rolls back and the request is due again.

Inside that transaction the impact is measured again around the changes; if its
affected set differs from the one approved, everything rolls back and the request goes
back to pending_approval (IMPACT_DRIFT). A failing change rolls everything back and
the request is marked failed. Both are recorded in a transaction of their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import SYSTEM_ACTOR, Actor, Principal
from service.base.errors import ServiceError
from service.base.timefmt import iso
from service.observability.logs import get_logger
from service.repositories.change_requests import ChangeRequestRow, StateChange
from service.schemas.change_requests import change_of
from service.usecases.changes.execution import ChangeExecution
from service.usecases.changes.impact import digest, drift
from service.usecases.changes.requests import (
    ChangeRequests,
    Shown,
    is_due,
    record_transition,
    wrong_state,
)
from service.usecases.common.deps import Deps

log = get_logger("service.change_requests")
Claim = Callable[[asyncpg.Connection], Awaitable[ChangeRequestRow | None]]


class _Drifted(Exception):
    def __init__(self, impact: list[dict[str, Any]]) -> None:
        self.impact = impact


class _NotApplicable(Exception):
    def __init__(self, request: ChangeRequestRow | None) -> None:
        self.request = request


def author_principal(request: ChangeRequestRow) -> Principal:
    """The changes apply as their author could make them: its scopes, its subtree."""
    return Principal(
        actor_id=request.author_id,
        actor_type=request.author_type,  # type: ignore[arg-type]
        scopes=frozenset(request.author_scopes),
        tenant_id=request.author_scope,
    )


class ChangeRequestApply:
    def __init__(self, deps: Deps, execution: ChangeExecution, requests: ChangeRequests) -> None:
        self.deps = deps
        self.repo = deps.repos.change_requests
        self.execution = execution
        self.requests = requests

    async def apply(self, principal: Principal, actor: Actor, request_id: UUID) -> Shown:
        """POST .../apply: the request applied (200), or the error that stopped it."""
        await self.requests.get(principal, request_id)  # 404 unless visible

        async def claim(conn: asyncpg.Connection) -> ChangeRequestRow | None:
            return await self.repo.lock_change_request(conn, request_id)

        await self._apply(claim, actor, raise_errors=True)
        return await self.requests.get(principal, request_id)

    async def approve(
        self, principal: Principal, actor: Actor, request_id: UUID, comment: str | None
    ) -> Shown:
        """Record the approval; an approved request whose apply_at has passed applies
        at once (a drift or a failing change shows in the request's state)."""
        after = await self.requests.review(
            principal, actor, request_id, approve=True, comment=comment
        )
        if after.state == "approved" and is_due(after):

            async def claim(conn: asyncpg.Connection) -> ChangeRequestRow | None:
                return await self.repo.lock_change_request(conn, request_id)

            await self._apply(claim, actor, raise_errors=False)
        return await self.requests.get(principal, request_id)

    async def apply_due(self) -> int:
        """The scheduler: apply one approved request whose apply_at has come (1) or
        find none (0)."""
        grace = self.deps.settings.change_request_apply_grace_seconds

        async def claim(conn: asyncpg.Connection) -> ChangeRequestRow | None:
            return await self.repo.claim_due_change_request(conn, grace)

        return 1 if await self._apply(claim, SYSTEM_ACTOR, raise_errors=False) else 0

    async def fail_missed(self) -> int:
        """The scheduler: approved requests whose apply_at passed more than
        CHANGE_REQUEST_APPLY_GRACE ago (the service was down) fail, visibly."""
        grace = self.deps.settings.change_request_apply_grace_seconds

        async def work(conn: asyncpg.Connection) -> int:
            missed = await self.repo.claim_missed_change_requests(conn, grace)
            for request in missed:
                assert request.apply_at is not None
                error = {
                    "code": "APPLY_MISSED",
                    "message": f"apply_at {iso(request.apply_at)} passed more than "
                    f"CHANGE_REQUEST_APPLY_GRACE ({grace} s) before the service could "
                    "apply it",
                }
                await self._mark_failed(conn, request, error, SYSTEM_ACTOR)
            return len(missed)

        return await self.deps.db.transaction(work)

    async def _apply(self, claim: Claim, actor: Actor, *, raise_errors: bool) -> bool:
        """Apply the request claim() locks; False when there was none to apply."""
        claimed: list[ChangeRequestRow] = []

        async def work() -> ChangeRequestRow:
            claimed.clear()  # a list run again starts from its claim
            request = await self.deps.db.transaction(claim)
            if request is None or request.state != "approved":
                raise _NotApplicable(request)
            claimed.append(request)
            changes = [change_of(c) for c in request.changes]
            impact = await self.execution.run_measured(author_principal(request), actor, changes)
            if digest(impact) != request.approved_digest:
                raise _Drifted(impact)

            async def finish(conn: asyncpg.Connection) -> ChangeRequestRow:
                after = await self.repo.update_change_request_state(
                    conn, request.id,
                    StateChange(state="applied", approvals=request.approvals,
                                approved_digest=request.approved_digest),
                )  # fmt: skip
                await record_transition(
                    self.deps, conn, actor, after, "change_request.applied",
                    {"before": {"state": "approved"}, "after": {"state": "applied"},
                     "changes": len(changes)},
                )  # fmt: skip
                return after

            return await self.deps.db.transaction(finish)

        try:
            applied = await self.execution.in_one_transaction(work, commit=True)
        except _NotApplicable as exc:
            if raise_errors:
                if exc.request is None:
                    raise self._gone() from None
                raise wrong_state(exc.request, "apply") from None
            return False
        except _Drifted as exc:
            request = claimed[0]
            after = await self._record_drift(request, exc.impact, actor)
            if raise_errors:
                raise self._drift_error(request, exc.impact, after) from None
            return True
        except ServiceError as exc:
            if not claimed:
                raise
            await self._record_failure(claimed[0], exc, actor)
            if raise_errors:
                raise
            log.warning("change request failed", id=str(claimed[0].id), code=exc.code)
            return True
        revision = await self.deps.db.run(
            lambda conn: self.repo.find_applied_revision(conn, applied.id)
        )
        if revision is not None:
            await self.deps.db.run(
                lambda conn: self.repo.set_change_request_revision(conn, applied.id, revision)
            )
        return True

    def _gone(self) -> ServiceError:
        return ServiceError("CHANGE_REQUEST_NOT_FOUND", "change request not found")

    async def _record_drift(
        self, request: ChangeRequestRow, impact: list[dict[str, Any]], actor: Actor
    ) -> ChangeRequestRow | None:
        async def work(conn: asyncpg.Connection) -> ChangeRequestRow | None:
            current = await self.repo.lock_change_request(conn, request.id)
            if current is None or current.state != "approved":
                return current
            after = await self.repo.update_change_request_state(
                conn, request.id,
                StateChange(state="pending_approval", next_round=True, impact=impact,
                            impact_digest=digest(impact)),
            )  # fmt: skip
            await record_transition(
                self.deps, conn, actor, after, "change_request.drifted",
                {"before": {"state": "approved", "impact_digest": request.approved_digest},
                 "after": {"state": after.state, "impact_digest": after.impact_digest},
                 "drift": drift(request.impact, impact)},
            )  # fmt: skip
            return after

        return await self.deps.db.transaction(work)

    def _drift_error(
        self,
        request: ChangeRequestRow,
        impact: list[dict[str, Any]],
        after: ChangeRequestRow | None,
    ) -> ServiceError:
        return ServiceError(
            "IMPACT_DRIFT",
            "the tenants and keys this change request affects differ from those approved; "
            "it is back in pending_approval with the new impact",
            extra={"drift": drift(request.impact, impact), "change_request_id": str(request.id)},
        )

    async def _record_failure(
        self, request: ChangeRequestRow, exc: ServiceError, actor: Actor
    ) -> None:
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.details:
            error["details"] = [d.as_dict() for d in exc.details]

        async def work(conn: asyncpg.Connection) -> None:
            current = await self.repo.lock_change_request(conn, request.id)
            if current is not None and current.state == "approved":
                await self._mark_failed(conn, current, error, actor)

        await self.deps.db.transaction(work)

    async def _mark_failed(
        self,
        conn: asyncpg.Connection,
        request: ChangeRequestRow,
        error: dict[str, Any],
        actor: Actor,
    ) -> None:
        after = await self.repo.update_change_request_state(
            conn, request.id,
            StateChange(state="failed", approvals=request.approvals,
                        approved_digest=request.approved_digest, error=error),
        )  # fmt: skip
        await record_transition(
            self.deps, conn, actor, after, "change_request.failed",
            {"before": {"state": "approved"}, "after": {"state": "failed"}, "error": error},
            error=error,
        )  # fmt: skip
