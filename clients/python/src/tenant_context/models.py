"""The shapes the service answers, as typed dicts: a parsed JSON body is the result, with
no copy and no validation cost (the service validates what it sends)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

IsolationStrategy = Literal["SHARED_RLS", "SCHEMA_PER_TENANT", "DB_PER_TENANT"]
PermissionMode = Literal["INHERIT", "LOCAL", "LOCKED"]
JSON = Any


class Tenant(TypedDict):
    id: str
    parent_id: str | None
    name: str
    slug: str
    ancestry_path: str
    depth: int
    config: dict[str, JSON]
    metadata: dict[str, JSON]
    isolation_strategy: IsolationStrategy
    region: str
    status: Literal["active", "archived"]
    deleted_at: str | None
    created_at: str
    updated_at: str
    child_count: NotRequired[int]


class TenantCreate(TypedDict):
    name: str
    slug: str
    parent_id: NotRequired[str | None]
    isolation_strategy: NotRequired[IsolationStrategy | None]
    config: NotRequired[dict[str, JSON] | None]
    metadata: NotRequired[dict[str, JSON] | None]


class TenantPage(TypedDict):
    data: list[Tenant]
    next_cursor: str | None
    has_more: bool


class BatchItemError(TypedDict):
    index: int
    code: str
    message: str
    field: NotRequired[str | None]


class TenantBatchResult(TypedDict):
    created: list[Tenant]
    errors: list[BatchItemError]


class ResolvedConfigEntry(TypedDict):
    key: str
    value: JSON
    source_tenant_id: str
    inherited: bool
    locked: bool
    masked_reason: NotRequired[str]


class ResolvedPermission(TypedDict):
    key: str
    value: bool
    mode: PermissionMode
    source_tenant_id: str
    locked: bool
    delegated: bool


class TenantContext(TypedDict):
    tenant_id: str
    ancestry_path: str
    depth: int
    isolation_strategy: IsolationStrategy
    resolved_config: dict[str, ResolvedConfigEntry]
    resolved_permissions: dict[str, ResolvedPermission]


class ContextBatch(TypedDict):
    contexts: list[TenantContext]
    not_found: list[str]


class ConfigEntry(TypedDict):
    key: str
    value: JSON
    locked: bool
    sensitive: bool
    reveal_to_descendants: bool
    created_at: str
    updated_at: str


class PermissionPolicy(TypedDict):
    key: str
    value: bool
    mode: PermissionMode
    created_at: str
    updated_at: str


class ApiKey(TypedDict):
    id: str
    tenant_id: str | None
    name: str
    prefix: str
    environment: str
    scopes: list[str]
    role_id: str | None
    effective_scopes: list[str]
    rate_limit_max: int | None
    rate_limit_window: str | None
    status: str
    created_at: str
    last_used_at: str | None
    expires_at: str | None
    revoked_at: str | None
    rotated_from: str | None


class ApiKeyWithPlaintext(ApiKey):
    plaintext_key: str


class ApiKeyPage(TypedDict):
    data: list[ApiKey]
    next_cursor: str | None
    has_more: bool


class Role(TypedDict):
    id: str
    tenant_id: str | None
    name: str
    description: str
    scopes: list[str]
    created_at: str
    updated_at: str


class Webhook(TypedDict):
    id: str
    url: str
    tenant_id: str | None
    events: list[str]
    description: str
    active: bool
    include_descendants: bool
    created_at: str
    updated_at: str
    disabled_reason: NotRequired[str | None]
    disabled_at: NotRequired[str | None]
    delivery_stats: NotRequired[dict[str, int]]


class WebhookWithSecret(Webhook):
    secret: str


class DeliveryStats(TypedDict):
    total: int
    pending: int
    success: int
    failed: int


class AuditEntry(TypedDict):
    id: str
    tenant_id: str | None
    actor_id: str
    actor_type: str
    action: str
    resource_type: str
    resource_id: str | None
    changes: dict[str, JSON] | None
    request_id: str | None
    ip_address: str | None
    created_at: str


class Consent(TypedDict):
    id: str
    tenant_id: str
    purpose: str
    status: str
    granted_at: str
    granted_by: str
    revoked_at: str | None
    revoked_by: str | None
    expires_at: str | None
    metadata: dict[str, JSON]


class TenantPatch(TypedDict, total=False):
    name: str
    slug: str
    config: dict[str, JSON]
    metadata: dict[str, JSON]


class ApiKeyPatch(TypedDict, total=False):
    name: str
    scopes: list[str]
    rate_limit_max: int | None
    rate_limit_window: str | None
    expires_at: str | None


class RolePatch(TypedDict, total=False):
    name: str
    description: str
    scopes: list[str]


class WebhookPatch(TypedDict, total=False):
    url: str
    events: list[str]
    secret: str
    description: str
    active: bool
    include_descendants: bool


class FlagEvaluation(TypedDict):
    """An OFREP evaluation (`/ofrep/v1/evaluate/flags/{key}`)."""

    key: str
    value: NotRequired[JSON]
    reason: NotRequired[str]
    variant: NotRequired[str]
    errorCode: NotRequired[str]
    errorDetails: NotRequired[str]
    metadata: NotRequired[dict[str, JSON]]


class BulkEvaluation(TypedDict):
    flags: list[FlagEvaluation]
    metadata: NotRequired[dict[str, JSON]]
