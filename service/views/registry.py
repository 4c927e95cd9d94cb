"""The names endpoints give as `response=` (service/http/routing.py), mapped to their
views. A new endpoint with a new shape adds its view (in the module of its area) and its
name here; tests/test_openapi.py names any declared response that has none."""

from __future__ import annotations

from typing import Any

from service.views.audit_chain import AuditChainLink, AuditChainVerification
from service.views.changes import (
    ChangeRequest,
    ChangeRequestPage,
    ImpactDriftError,
    TenantProtection,
)
from service.views.compliance import (
    AuditEntry,
    Consent,
    EncryptionKeyRotation,
    PurgeExpiredResult,
    PurgeResult,
    Region,
    RegionMigration,
    TenantExport,
)
from service.views.contexts import ContextBatchResult, ContextStreamEvent
from service.views.entries import ConfigEntry, PermissionPolicy, TenantContext
from service.views.errors import Error, TenantBatchError
from service.views.impact import ConfigChangePreview, MovePreview, PermissionChangePreview
from service.views.keys import ApiKey, ApiKeyPage, ApiKeyWithPlaintext, EffectiveScopes, Role
from service.views.ofrep import (
    OfrepBadRequest,
    OfrepBulkEvaluation,
    OfrepEvaluation,
    OfrepFlagNotFound,
)
from service.views.probes import Health, Index, Readiness
from service.views.session import SignedIn
from service.views.tenants import Tenant, TenantBatchResult, TenantPage
from service.views.webhooks import (
    DeliveryPage,
    DeliveryStats,
    FailedDelivery,
    RecoverResult,
    RetryAllResult,
    RetryResult,
    Webhook,
    WebhookTestResult,
    WebhookWithSecret,
)

RESPONSES: dict[str, Any] = {
    "Tenant": Tenant,
    "TenantProtection": TenantProtection,
    "ChangeRequest": ChangeRequest,
    "ChangeRequestPage": ChangeRequestPage,
    "ImpactDriftError": ImpactDriftError,
    "TenantList": list[Tenant],
    "TenantPage": TenantPage,
    "TenantBatchResult": TenantBatchResult,
    "TenantBatchError": TenantBatchError,
    "ConfigEntry": ConfigEntry,
    "ConfigEntryList": list[ConfigEntry],
    "PermissionPolicy": PermissionPolicy,
    "PermissionPolicyList": list[PermissionPolicy],
    "TenantContext": TenantContext,
    "TenantContextList": list[TenantContext],
    "ContextBatchResult": ContextBatchResult,
    "ContextStreamEvent": ContextStreamEvent,
    "OfrepEvaluation": OfrepEvaluation,
    "OfrepBulkEvaluation": OfrepBulkEvaluation,
    "OfrepBadRequest": OfrepBadRequest,
    "OfrepFlagNotFound": OfrepFlagNotFound,
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
    "RecoverResult": RecoverResult,
    "AuditEntry": AuditEntry,
    "AuditEntryList": list[AuditEntry],
    "AuditChainVerification": AuditChainVerification,
    "ConfigChangePreview": ConfigChangePreview,
    "PermissionChangePreview": PermissionChangePreview,
    "MovePreview": MovePreview,
    "AuditChainLinkList": list[AuditChainLink],
    "Consent": Consent,
    "ConsentList": list[Consent],
    "TenantExport": TenantExport,
    "PurgeResult": PurgeResult,
    "RegionList": list[Region],
    "RegionMigration": RegionMigration,
    "PurgeExpiredResult": PurgeExpiredResult,
    "Health": Health,
    "Index": Index,
    "SignedIn": SignedIn,
    "Readiness": Readiness,
    "Error": Error,
    "OpenApiDocument": dict[str, Any],
    "MetricsText": str,
    "ConsolePage": str,
    "ConsoleAsset": str,
}
