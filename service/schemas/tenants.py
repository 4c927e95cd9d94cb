"""Tenant request bodies and query strings."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.schemas.common import (
    NO_NUL,
    ConfigKey,
    NonNull,
    Strict,
    check_anchored,
    check_config_map,
    check_json,
    check_text,
)
from service.schemas.history import Revision, check_one_moment
from service.schemas.times import AwareDatetime

SLUG_PATTERN = r"^[a-z][a-z0-9_]{0,62}$"
TenantName = Annotated[str, msgspec.Meta(min_length=1, max_length=255, extra_json_schema=NO_NUL)]
Slug = Annotated[str, msgspec.Meta(pattern=SLUG_PATTERN, max_length=63)]
IsolationStrategy = Literal["SHARED_RLS", "SCHEMA_PER_TENANT", "DB_PER_TENANT"]
StatusFilter = Literal["active", "archived", "all"]
MAX_BATCH = 100


class TenantCreate(Strict):
    name: TenantName
    slug: Slug
    parent_id: UUID | None = None
    isolation_strategy: IsolationStrategy | None = None
    config: dict[ConfigKey, NonNull] | None = None
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_text(self.name, "name")
        check_anchored(self.slug, "slug")
        check_config_map(self.config)
        if self.config and any(v is None for v in self.config.values()):
            raise ValueError("config: values on create must not be null")
        if self.metadata is not None:
            check_json(self.metadata, "metadata")


BatchItem = Annotated[
    msgspec.Raw, msgspec.Meta(extra_json_schema={"$ref": "#/components/schemas/TenantCreate"})
]


class TenantBatchCreate(Strict):
    # Items stay raw so each is validated on its own and every bad one is reported; the
    # document still says what each must be (POST /api/v1/tenants puts TenantCreate there).
    tenants: Annotated[
        list[BatchItem],
        msgspec.Meta(
            min_length=1,
            max_length=MAX_BATCH,
            description="Each item counts as one request against the caller's rate limit "
            "(429 when the bucket lacks them; 400 when they exceed the caller's whole limit).",
        ),
    ]


class TenantPatch(Strict):
    name: TenantName | UnsetType = UNSET
    slug: Slug | UnsetType = UNSET
    # JSON merge patch (RFC 7396): a key set to null is removed.
    config: dict[ConfigKey, Any] | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            check_text(self.name, "name")
        if self.slug is not UNSET:
            check_anchored(self.slug, "slug")
        if self.config is not UNSET:
            check_config_map(self.config)
        if self.metadata is not UNSET:
            check_json(self.metadata, "metadata")


class TenantMove(Strict):
    new_parent_id: UUID | None


SearchText = Annotated[str, msgspec.Meta(min_length=1, max_length=255, extra_json_schema=NO_NUL)]


class ListTenantsQuery(Strict):
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50
    status: StatusFilter = "active"
    parent_id: UUID | None = None
    slug: Annotated[str, msgspec.Meta(max_length=63)] | None = None
    # Options for tree browsers (docs/decisions/console.md): the top of the visible
    # forest, a case-insensitive name or slug search, and direct-child counts.
    roots: bool = False
    search: SearchText | None = None
    include_child_counts: bool = False

    def __post_init__(self) -> None:
        if self.roots and self.parent_id is not None:
            raise ValueError("roots: cannot be combined with parent_id")
        if self.search is not None:
            check_text(self.search, "search")


class GetTenantQuery(Strict):
    include_archived: bool = False
    # The tenant as it was then (docs/history.md).
    as_of: AwareDatetime | None = None
    revision: Revision | None = None

    def __post_init__(self) -> None:
        check_one_moment(self.as_of, self.revision)


class ChildrenQuery(Strict):
    include_archived: bool = False
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    include_child_counts: bool = False


class DescendantsQuery(Strict):
    include_archived: bool = False
    max_depth: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
    # Paging: without limit the whole list is streamed (one plain array).
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None
