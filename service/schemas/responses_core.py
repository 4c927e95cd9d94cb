"""Response shapes of tenants, config entries, permissions, the context, API keys, roles,
errors and probes (see service/schemas/responses.py for what they are for)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from service.schemas.api_keys import Scope
from service.schemas.config import PermissionMode
from service.schemas.tenants import IsolationStrategy

# Every timestamp is UTC with milliseconds and a Z: an RFC 3339 date-time.
Instant = Annotated[datetime, msgspec.Meta(tz=True)]


class Shape(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every response shape: the document lists every field there is."""


class Tenant(Shape):
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


class TenantPage(Shape):
    data: list[Tenant]
    next_cursor: UUID | None
    has_more: bool


class BatchItemError(Shape):
    index: int
    code: str
    message: str
    field: str | None = None


class TenantBatchResult(Shape):
    created: list[Tenant]
    errors: list[BatchItemError]


class FieldProblem(Shape):
    field: str
    message: str


class ErrorDetail(Shape):
    code: str
    message: str
    request_id: str
    details: list[FieldProblem] | None = None


class Error(Shape):
    error: ErrorDetail


class TenantBatchError(Shape):
    """A refused batch names every failing item; other 400s carry only `error`."""

    error: ErrorDetail
    created: list[Tenant] | None = None
    errors: list[BatchItemError] | None = None


class ConfigEntry(Shape):
    key: str
    value: Any
    locked: bool
    sensitive: bool
    created_at: Instant
    updated_at: Instant


class PermissionPolicy(Shape):
    key: str
    value: bool
    mode: PermissionMode
    created_at: Instant
    updated_at: Instant


class ResolvedConfigEntry(Shape):
    key: str
    value: Any
    source_tenant_id: UUID
    inherited: bool
    locked: bool


class ResolvedPermission(Shape):
    key: str
    value: bool
    mode: PermissionMode
    source_tenant_id: UUID
    locked: bool
    delegated: bool


class TenantContext(Shape):
    tenant_id: UUID
    ancestry_path: str
    depth: int
    isolation_strategy: IsolationStrategy
    resolved_config: dict[str, ResolvedConfigEntry]
    resolved_permissions: dict[str, ResolvedPermission]


class EncryptionKeyRotation(Shape):
    config_entries_rotated: int
    webhooks_rotated: int


class ApiKey(Shape):
    id: UUID
    tenant_id: UUID | None
    name: str
    prefix: str
    environment: Literal["live", "test"]
    scopes: list[Scope]
    role_id: UUID | None
    effective_scopes: list[Scope]
    rate_limit_max: int | None
    rate_limit_window: str | None
    status: Literal["active", "revoked", "expired"]
    created_at: Instant
    last_used_at: Instant | None
    expires_at: Instant | None
    revoked_at: Instant | None
    rotated_from: UUID | None


class ApiKeyWithPlaintext(ApiKey):
    plaintext_key: str


class ApiKeyPage(Shape):
    data: list[ApiKey]
    next_cursor: UUID | None
    has_more: bool


class EffectiveScopes(Shape):
    api_key_id: UUID
    scopes: list[Scope]
    source: Literal["role", "key"]
    role_id: UUID | None


class Role(Shape):
    id: UUID
    tenant_id: UUID | None
    name: str
    description: str
    scopes: list[Scope]
    created_at: Instant
    updated_at: Instant


class Health(Shape):
    status: Literal["ok"]


class Readiness(Shape):
    status: Literal["ok", "unavailable"]
    database: Literal["ok", "unreachable", "migrations pending"]
    migration: int | None = None
