"""Response shapes of webhooks and deliveries, audit entries, consent, GDPR export and
purge, regions and maintenance (see service/schemas/responses.py)."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from service.schemas.responses_core import (
    ApiKey,
    ConfigEntry,
    Instant,
    PermissionPolicy,
    Role,
    Shape,
    Tenant,
)
from service.schemas.webhooks import DeliveryStatus, EventType


class Webhook(Shape):
    id: UUID
    url: str
    tenant_id: UUID | None
    events: list[EventType]
    description: str
    active: bool
    include_descendants: bool
    created_at: Instant
    updated_at: Instant


class WebhookWithSecret(Webhook):
    secret: str


class WebhookTestResult(Shape):
    success: bool
    response_code: int
    duration_ms: float
    error: str | None = None


class Delivery(Shape):
    id: UUID
    webhook_id: UUID
    event_id: UUID
    event_type: str
    status: DeliveryStatus
    attempts: int
    max_attempts: int
    next_attempt_at: Instant | None
    last_attempt_at: Instant | None
    last_response_code: int | None
    last_error: str | None
    created_at: Instant
    updated_at: Instant


class DeliveryPage(Shape):
    data: list[Delivery]
    next_cursor: UUID | None
    has_more: bool


class DeliveryWebhook(Shape):
    id: UUID
    url: str
    tenant_id: UUID | None


class DeliveryEvent(Shape):
    id: UUID
    type: str
    tenant_id: UUID | None
    payload: dict[str, Any]
    created_at: Instant


class FailedDelivery(Delivery):
    webhook: DeliveryWebhook
    event: DeliveryEvent


class DeliveryStats(Shape):
    total: int
    pending: int
    success: int
    failed: int


class RetryAllResult(Shape):
    retried: int


class RetryResult(Shape):
    success: bool


class AuditEntry(Shape):
    id: UUID
    tenant_id: UUID | None
    actor_id: str
    actor_type: Literal["api_key", "jwt", "system"]
    action: str
    resource_type: str
    resource_id: str | None
    changes: dict[str, Any] | None
    request_id: str | None
    ip_address: str | None
    created_at: Instant


class Consent(Shape):
    id: UUID
    tenant_id: UUID
    purpose: str
    status: Literal["granted", "revoked", "expired"]
    granted_at: Instant
    granted_by: str
    revoked_at: Instant | None
    revoked_by: str | None
    expires_at: Instant | None
    metadata: dict[str, Any]


class ExportedChild(Shape):
    id: UUID
    slug: str
    name: str
    status: Literal["active", "archived"]


class TenantExport(Shape):
    format_version: int
    exported_at: Instant
    tenant: Tenant
    config: list[ConfigEntry]
    permissions: list[PermissionPolicy]
    consents: list[Consent]
    audit_logs: list[AuditEntry]
    webhooks: list[Webhook]
    api_keys: list[ApiKey]
    roles: list[Role]
    children: list[ExportedChild]


class PurgeResult(Shape):
    tenant_id: UUID
    purged: Literal[True]
    counts: dict[str, int]


class Region(Shape):
    name: str
    default: bool


class RegionMigration(Shape):
    tenant_id: UUID
    from_region: str
    to_region: str
    tenants_migrated: int


class PurgeExpiredResult(Shape):
    dry_run: bool
    audit_logs: int
    webhook_deliveries: int
    events: int
    consents: int
    archived_tenants: int
    # Idempotency-Key records older than 24 hours (docs/decisions.md, "Idempotency").
    idempotency_keys: int
