"""Who sees which webhook: global callers all; a tenant-scoped caller only webhooks of
tenants in its subtree, never global ones (404 otherwise, as for a missing id)."""

from __future__ import annotations

from service.auth.principal import Principal
from service.base.errors import FieldError, ServiceError
from service.repositories.webhooks import WebhookRow
from service.webhooks.urlguard import UnsafeUrl


def can_see(principal: Principal, tenant_path: str | None) -> bool:
    if principal.tenant_id is None:
        return True
    return tenant_path is not None and principal.can_see_path(tenant_path)


def webhook_not_found() -> ServiceError:
    return ServiceError("WEBHOOK_NOT_FOUND", "webhook not found")


def delivery_not_found() -> ServiceError:
    return ServiceError("DELIVERY_NOT_FOUND", "delivery not found")


def visible_webhook(principal: Principal, webhook: WebhookRow | None) -> WebhookRow:
    if webhook is None or not can_see(principal, webhook.tenant_path):
        raise webhook_not_found()
    return webhook


def unsafe_url(exc: UnsafeUrl) -> ServiceError:
    message = str(exc)
    return ServiceError(
        "UNSAFE_WEBHOOK_URL", f"url: {message}", details=[FieldError("url", message)]
    )
