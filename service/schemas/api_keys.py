"""API-key and role request bodies and query strings (docs/api.md, Authentication and scopes)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.base.durations import DURATION_PATTERN
from service.schemas.common import NO_NUL, Strict, check_text

Scope = Literal["read", "write", "admin"]
Scopes = Annotated[list[Scope], msgspec.Meta(min_length=1, max_length=3)]
KeyName = Annotated[str, msgspec.Meta(min_length=1, max_length=255, extra_json_schema=NO_NUL)]
RoleName = Annotated[str, msgspec.Meta(min_length=1, max_length=100, extra_json_schema=NO_NUL)]
Description = Annotated[str, msgspec.Meta(max_length=1000, extra_json_schema=NO_NUL)]
RateLimitMax = Annotated[int, msgspec.Meta(ge=1, le=100_000)]
# Parsed by service.durations in the use case (its message names the problem); the
# document's pattern is built from the same table and says exactly what it accepts.
WindowText = Annotated[
    str,
    msgspec.Meta(min_length=1, max_length=64, extra_json_schema={"pattern": DURATION_PATTERN}),
]
GracePeriod = Annotated[int, msgspec.Meta(ge=0, le=604_800)]
# An instant needs its offset: "2030-01-01T00:00:00" alone names no instant.
Instant = Annotated[datetime, msgspec.Meta(tz=True)]


def _default_scopes() -> list[Scope]:
    return ["read"]


class ApiKeyCreate(Strict):
    name: KeyName
    tenant_id: UUID | None = None
    scopes: Scopes = msgspec.field(default_factory=_default_scopes)
    # Unset: sk_live_ when SERVICE_ENV=production, sk_test_ otherwise.
    environment: Literal["live", "test"] | None = None
    rate_limit_max: RateLimitMax | None = None
    rate_limit_window: WindowText | None = None
    expires_at: Instant | None = None
    role_id: UUID | None = None

    def __post_init__(self) -> None:
        check_text(self.name, "name")


class ApiKeyPatch(Strict):
    name: KeyName | UnsetType = UNSET
    scopes: Scopes | UnsetType = UNSET
    # null puts the key back on the global default (RATE_LIMIT_MAX / RATE_LIMIT_WINDOW).
    rate_limit_max: RateLimitMax | UnsetType | None = UNSET
    rate_limit_window: WindowText | UnsetType | None = UNSET
    # null: the key never expires.
    expires_at: Instant | UnsetType | None = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            check_text(self.name, "name")


class ApiKeyRotate(Strict):
    grace_period_seconds: GracePeriod = 0


class RoleAssignment(Strict):
    role_id: UUID


class ListApiKeysQuery(Strict):
    tenant_id: UUID | None = None
    include_revoked: bool = False
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50


class DormantQuery(Strict):
    days: Annotated[int, msgspec.Meta(ge=1, le=3650)] = 90


class RoleCreate(Strict):
    name: RoleName
    scopes: Scopes
    description: Description = ""
    tenant_id: UUID | None = None

    def __post_init__(self) -> None:
        check_text(self.name, "name")
        check_text(self.description, "description")


class RolePatch(Strict):
    name: RoleName | UnsetType = UNSET
    scopes: Scopes | UnsetType = UNSET
    description: Description | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.name is not UNSET:
            check_text(self.name, "name")
        if self.description is not UNSET:
            check_text(self.description, "description")


class ListRolesQuery(Strict):
    tenant_id: UUID | None = None
