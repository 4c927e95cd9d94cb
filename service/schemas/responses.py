"""The shapes of response bodies, for the OpenAPI document.

The handlers render with the representation functions (plain dicts, orjson); these
Structs describe what those functions produce. They forbid unknown fields, so the
document says `additionalProperties: false` and the Schemathesis run
(tests/test_schemathesis.py) fails the moment a representation gains a field that is not
described here.

`RESPONSES` maps the names handlers give as `response=` to their types. A branch that
adds an endpoint with a new name adds its shape (responses_core.py for tenants, config,
keys and roles; responses_admin.py for the rest) and its name here; tests/test_openapi.py
names any declared response that has none.
"""

from __future__ import annotations

from typing import Any

from service.schemas.responses_admin import (
    AuditEntry,
    Consent,
    DeliveryPage,
    DeliveryStats,
    FailedDelivery,
    PurgeExpiredResult,
    PurgeResult,
    Region,
    RegionMigration,
    RetryAllResult,
    RetryResult,
    TenantExport,
    Webhook,
    WebhookTestResult,
    WebhookWithSecret,
)
from service.schemas.responses_core import (
    ApiKey,
    ApiKeyPage,
    ApiKeyWithPlaintext,
    ConfigEntry,
    EffectiveScopes,
    EncryptionKeyRotation,
    Error,
    Health,
    PermissionPolicy,
    Readiness,
    Role,
    Tenant,
    TenantBatchError,
    TenantBatchResult,
    TenantContext,
    TenantPage,
)

RESPONSES: dict[str, Any] = {
    "Tenant": Tenant,
    "TenantList": list[Tenant],
    "TenantPage": TenantPage,
    "TenantBatchResult": TenantBatchResult,
    "TenantBatchError": TenantBatchError,
    "ConfigEntry": ConfigEntry,
    "ConfigEntryList": list[ConfigEntry],
    "PermissionPolicy": PermissionPolicy,
    "PermissionPolicyList": list[PermissionPolicy],
    "TenantContext": TenantContext,
    "EncryptionKeyRotation": EncryptionKeyRotation,
    "ApiKey": ApiKey,
    "ApiKeyList": list[ApiKey],
    "ApiKeyPage": ApiKeyPage,
    "ApiKeyWithPlaintext": ApiKeyWithPlaintext,
    "EffectiveScopes": EffectiveScopes,
    "Role": Role,
    "RoleList": list[Role],
    "Webhook": Webhook,
    "WebhookList": list[Webhook],
    "WebhookWithSecret": WebhookWithSecret,
    "WebhookTestResult": WebhookTestResult,
    "DeliveryPage": DeliveryPage,
    "FailedDeliveryList": list[FailedDelivery],
    "DeliveryStats": DeliveryStats,
    "RetryAllResult": RetryAllResult,
    "RetryResult": RetryResult,
    "AuditEntry": AuditEntry,
    "AuditEntryList": list[AuditEntry],
    "Consent": Consent,
    "ConsentList": list[Consent],
    "TenantExport": TenantExport,
    "PurgeResult": PurgeResult,
    "RegionList": list[Region],
    "RegionMigration": RegionMigration,
    "PurgeExpiredResult": PurgeExpiredResult,
    "Health": Health,
    "Readiness": Readiness,
    "Error": Error,
    "OpenApiDocument": dict[str, Any],
    "MetricsText": str,
    "ConsolePage": str,
    "ConsoleAsset": str,
}
