"""Views of tenants: one tenant, pages of them, and batch answers."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from service.repositories import tenants as rows
from service.schemas.tenants import IsolationStrategy
from service.views.base import Instant, View, instant, instant_or_none


class Tenant(View):
    id: UUID
    parent_id: UUID | None
    name: str
    slug: str
    ancestry_path: str
    depth: int
    config: dict[str, Any]
    metadata: dict[str, Any]
    isolation_strategy: IsolationStrategy
    region: str
    status: Literal["active", "archived"]
    deleted_at: Instant | None
    created_at: Instant
    updated_at: Instant
    # Only in lists asked with include_child_counts=true.
    child_count: Annotated[int, msgspec.Meta(ge=0)] | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(
        cls, t: rows.TenantRow, *, child_count: int | msgspec.UnsetType = msgspec.UNSET
    ) -> Tenant:
        return cls(
            id=t.id,
            parent_id=t.parent_id,
            name=t.name,
            slug=t.slug,
            ancestry_path=t.ancestry_path,
            depth=t.depth,
            config=t.config,
            metadata=t.metadata,
            isolation_strategy=t.isolation_strategy,  # type: ignore[arg-type]
            region=t.region,
            status=t.status,  # type: ignore[arg-type]
            deleted_at=instant_or_none(t.deleted_at),
            created_at=instant(t.created_at),
            updated_at=instant(t.updated_at),
            child_count=child_count,
        )


class TenantPage(View):
    data: list[Tenant]
    next_cursor: UUID | None
    has_more: bool


class BatchItemError(View):
    index: int
    code: str
    message: str
    field: str | None = None


class TenantBatchResult(View):
    created: list[Tenant]
    errors: list[BatchItemError]
