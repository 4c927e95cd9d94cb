"""Views of protected subtrees and change requests (docs/change-requests.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.repositories.change_requests import ChangeRequestRow, Review
from service.repositories.protection import Protection
from service.schemas.change_requests import Change, ChangeRequestState, change_of
from service.views.base import Instant, View, instant, instant_or_none
from service.views.errors import ErrorDetail


class TenantProtection(View):
    tenant_id: UUID
    protected: bool
    protected_at: Instant
    protected_by: str

    @classmethod
    def of(cls, row: Protection) -> TenantProtection:
        return cls(
            tenant_id=row.tenant_id,
            protected=True,
            protected_at=instant(row.protected_at),
            protected_by=row.protected_by,
        )


class ValueChange(View):
    """A resolved entry before and after (null: absent)."""

    before: Any
    after: Any


class TextChange(View):
    before: str | None
    after: str | None


class TenantImpact(View):
    """One tenant whose resolved context (or state) the changes alter, key by key."""

    tenant_id: UUID
    config: dict[str, ValueChange] | UnsetType = UNSET
    permissions: dict[str, ValueChange] | UnsetType = UNSET
    ancestry_path: TextChange | UnsetType = UNSET
    status: TextChange | UnsetType = UNSET


class ChangeRequestAuthor(View):
    id: str
    type: str


class ChangeRequestReview(View):
    reviewer_id: str
    reviewer_type: str
    verdict: Literal["approved", "rejected"]
    comment: str | None
    round: int
    created_at: Instant


class ChangeRequestError(View):
    code: str
    message: str
    details: list[dict[str, str]] | UnsetType = UNSET


class ChangeRequest(View):
    id: UUID
    title: str
    description: str
    state: ChangeRequestState
    changes: list[Change]
    apply_at: Instant | None
    author: ChangeRequestAuthor
    impact: list[TenantImpact]
    impact_digest: Annotated[
        str,
        msgspec.Meta(
            description="sha256 of the affected set (tenants and keys, position and state "
            "changes; not values): an apply whose recomputed set differs is refused."
        ),
    ]
    approvals: int
    approvals_required: int
    reviews: list[ChangeRequestReview]
    revision: int | None
    error: ChangeRequestError | None
    created_at: Instant
    updated_at: Instant
    applied_at: Instant | None

    @classmethod
    def of(
        cls, row: ChangeRequestRow, reviews: Sequence[Review], approvals_required: int
    ) -> ChangeRequest:
        return cls(
            id=row.id,
            title=row.title,
            description=row.description,
            state=row.state,  # type: ignore[arg-type]
            changes=[change_of(c) for c in row.changes],
            apply_at=instant_or_none(row.apply_at),
            author=ChangeRequestAuthor(id=row.author_id, type=row.author_type),
            impact=msgspec.convert(row.impact, list[TenantImpact]),
            impact_digest=row.impact_digest,
            approvals=row.approvals,
            approvals_required=approvals_required,
            reviews=[
                ChangeRequestReview(
                    reviewer_id=r.reviewer_id,
                    reviewer_type=r.reviewer_type,
                    verdict=r.verdict,  # type: ignore[arg-type]
                    comment=r.comment,
                    round=r.review_round,
                    created_at=instant(r.created_at),
                )
                for r in reviews
            ],
            revision=row.revision,
            error=None if row.error is None else msgspec.convert(row.error, ChangeRequestError),
            created_at=instant(row.created_at),
            updated_at=instant(row.updated_at),
            applied_at=instant_or_none(row.applied_at),
        )


class ChangeRequestPage(View):
    data: list[ChangeRequest]
    next_cursor: UUID | None
    has_more: bool


class DriftMember(View):
    tenant_id: UUID
    what: Literal["config", "permission", "position", "status"]
    key: str | UnsetType = UNSET


class ImpactDrift(View):
    added: list[DriftMember]
    removed: list[DriftMember]


class ImpactDriftError(View):
    """409 IMPACT_DRIFT: the error, what entered and left the affected set since
    approval, and the request's id (it is back in pending_approval with the new
    impact). Other 409s carry only `error`."""

    error: ErrorDetail
    drift: ImpactDrift | UnsetType = UNSET
    change_request_id: UUID | UnsetType = UNSET
