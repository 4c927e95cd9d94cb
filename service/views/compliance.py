"""Views of audit entries, consents, the GDPR export and purge, regions, retention and
encryption key rotation."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from service.views.base import AlwaysTrue, Instant, RowView, View
from service.views.entries import ConfigEntry, PermissionPolicy
from service.views.keys import ApiKey, Role
from service.views.tenants import Tenant
from service.views.webhooks import Webhook


class AuditEntry(RowView):
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


class Consent(RowView):
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


class ExportedChild(View):
    id: UUID
    slug: str
    name: str
    status: Literal["active", "archived"]


class TenantExport(View):
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


class PurgeResult(View):
    tenant_id: UUID
    purged: AlwaysTrue
    counts: dict[str, int]


class Region(View):
    name: str
    default: bool


class RegionMigration(View):
    tenant_id: UUID
    from_region: str
    to_region: str
    tenants_migrated: int


class PurgeExpiredResult(View):
    dry_run: bool
    audit_logs: int
    webhook_deliveries: int
    events: int
    consents: int
    archived_tenants: int
    # Idempotency-Key records older than 24 hours (docs/decisions/api.md, "Idempotency and faults").
    idempotency_keys: int
    # Revisions of the log of context changes (REVISION_RETENTION_DAYS).
    context_revisions: int
    # Versions of the history of the resolved view and its revisions (HISTORY_RETENTION_DAYS).
    context_history: int


class EncryptionKeyRotation(View):
    config_entries_rotated: int
    webhooks_rotated: int
