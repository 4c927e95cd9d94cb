"""Change request bodies and query strings (docs/change-requests.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.schemas.common import (
    NO_NUL,
    ConfigKey,
    NonNull,
    Strict,
    check_config_value,
    check_json,
    check_text,
)
from service.schemas.config import Expiry, PermissionMode, check_expiry
from service.schemas.tenants import Slug, TenantName
from service.schemas.times import check_utc

ChangeRequestState = Literal[
    "draft", "pending_approval", "approved", "rejected", "cancelled", "applied", "failed"
]
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=200, extra_json_schema=NO_NUL)]
Text = Annotated[str, msgspec.Meta(max_length=5000, extra_json_schema=NO_NUL)]
MAX_CHANGES = 100


class ConfigSetChange(Strict, tag="config.set", tag_field="op", omit_defaults=True):
    tenant_id: UUID
    key: ConfigKey
    value: NonNull
    locked: bool | UnsetType = UNSET
    sensitive: bool | UnsetType = UNSET
    expires_at: Expiry | None = None

    def __post_init__(self) -> None:
        if self.value is None:
            raise ValueError("value: must not be null (config.delete removes an entry)")
        check_config_value(self.value, "value")
        check_utc(self.expires_at, "expires_at")


class ConfigDeleteChange(Strict, tag="config.delete", tag_field="op", omit_defaults=True):
    tenant_id: UUID
    key: ConfigKey


class PermissionSetChange(Strict, tag="permission.set", tag_field="op", omit_defaults=True):
    tenant_id: UUID
    key: ConfigKey
    value: bool
    mode: PermissionMode | UnsetType = UNSET
    expires_at: Expiry | None = None

    def __post_init__(self) -> None:
        check_utc(self.expires_at, "expires_at")


class PermissionDeleteChange(Strict, tag="permission.delete", tag_field="op", omit_defaults=True):
    tenant_id: UUID
    key: ConfigKey


class TenantMoveChange(Strict, tag="tenant.move", tag_field="op", omit_defaults=True):
    tenant_id: UUID
    new_parent_id: UUID | None


class TenantUpdateChange(Strict, tag="tenant.update", tag_field="op", omit_defaults=True):
    tenant_id: UUID
    name: TenantName | UnsetType = UNSET
    slug: Slug | UnsetType = UNSET
    # JSON merge patch (RFC 7396), as PATCH /tenants/{id} takes it.
    metadata: dict[str, Any] | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            check_text(self.name, "name")
        if self.metadata is not UNSET:
            check_json(self.metadata, "metadata")


class TenantArchiveChange(Strict, tag="tenant.archive", tag_field="op", omit_defaults=True):
    tenant_id: UUID


class TenantRestoreChange(Strict, tag="tenant.restore", tag_field="op", omit_defaults=True):
    tenant_id: UUID


Change = (
    ConfigSetChange
    | ConfigDeleteChange
    | PermissionSetChange
    | PermissionDeleteChange
    | TenantMoveChange
    | TenantUpdateChange
    | TenantArchiveChange
    | TenantRestoreChange
)
ChangeList = Annotated[list[Change], msgspec.Meta(min_length=1, max_length=MAX_CHANGES)]


class ChangeRequestCreate(Strict):
    title: Title
    changes: ChangeList
    description: Text = ""
    # Applied automatically at this instant once approved (approved later: at once).
    apply_at: Annotated[datetime, msgspec.Meta(tz=True)] | None = None
    # true: kept as a draft (not reviewable) until POST .../submit.
    draft: bool = False

    def __post_init__(self) -> None:
        check_text(self.title, "title")
        check_text(self.description, "description")
        check_utc(self.apply_at, "apply_at")
        for change in self.changes:
            if isinstance(change, ConfigSetChange | PermissionSetChange):
                check_expiry(change.expires_at)


class ReviewBody(Strict):
    comment: Text | None = None

    def __post_init__(self) -> None:
        if self.comment is not None:
            check_text(self.comment, "comment")


class ListChangeRequestsQuery(Strict):
    state: ChangeRequestState | None = None
    author: (
        Annotated[str, msgspec.Meta(min_length=1, max_length=255, extra_json_schema=NO_NUL)] | None
    ) = None
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50


def change_document(change: Change) -> dict[str, Any]:
    """A change as stored and shown (its op first)."""
    return msgspec.to_builtins(change)  # type: ignore[no-any-return]


def change_of(document: dict[str, Any]) -> Change:
    change: Change = msgspec.convert(document, Change)
    return change
