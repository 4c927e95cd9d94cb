"""Views of webhooks and deliveries (docs/api.md, Webhooks). Never a secret, except the one
`secret` field of the answers that create or rotate it."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

import msgspec

from service.repositories.deliveries import DeliveryRow, DeliveryStatsRow, FailedDeliveryRow
from service.repositories.webhook_health import WebhookHealthRow
from service.repositories.webhooks import WebhookRow
from service.schemas.webhooks import DeliveryStatus, EventType
from service.views.base import Instant, View, instant, instant_or_none
from service.webhooks.signing import standard_webhooks_secret


class WebhookDeliveryStats(View):
    success_rate: float | None
    attempts_succeeded: int
    attempts_failed: int
    last_success_at: Instant | None
    last_failure_at: Instant | None

    @classmethod
    def of(cls, h: WebhookHealthRow | None) -> WebhookDeliveryStats:
        if h is None:
            return cls(success_rate=None, attempts_succeeded=0, attempts_failed=0,
                       last_success_at=None, last_failure_at=None)  # fmt: skip
        total = h.attempts_succeeded + h.attempts_failed
        return cls(
            success_rate=None if total == 0 else round(h.attempts_succeeded / total, 4),
            attempts_succeeded=h.attempts_succeeded,
            attempts_failed=h.attempts_failed,
            last_success_at=instant_or_none(h.last_success_at),
            last_failure_at=instant_or_none(h.last_failure_at),
        )


class Webhook(View):
    id: UUID
    url: str
    tenant_id: UUID | None
    events: list[EventType]
    description: str
    active: bool
    include_descendants: bool
    created_at: Instant
    updated_at: Instant
    # API answers add these (endpoint health); a GDPR export's webhooks do not carry them.
    disabled_reason: str | msgspec.UnsetType | None = msgspec.UNSET
    disabled_at: Instant | msgspec.UnsetType | None = msgspec.UNSET
    delivery_stats: WebhookDeliveryStats | msgspec.UnsetType = msgspec.UNSET

    @classmethod
    def of(cls, w: WebhookRow) -> Webhook:
        """The webhook as a GDPR export carries it (no health)."""
        return cls(**_webhook_fields(w))

    @classmethod
    def answer(cls, w: WebhookRow, h: WebhookHealthRow | None) -> Webhook:
        """The webhook as the API answers it: with its disabling reason and statistics."""
        return cls(**_webhook_fields(w), **_health_fields(h))


class WebhookWithSecret(Webhook, kw_only=True):
    # Required although they follow fields with defaults: kw_only allows it (repeated
    # here for mypy, which does not see View's).
    secret: Annotated[
        str,
        msgspec.Meta(
            description="The secret as given (or generated): X-Service-Signature's key is "
            "its UTF-8 bytes. Shown only in this answer."
        ),
    ]
    # The same secret as the official Standard Webhooks libraries take it (signing.py).
    standard_webhooks_secret: Annotated[
        str,
        msgspec.Meta(
            description="`whsec_` + base64 of the key of `webhook-signature`: pass it as is "
            "to the official Standard Webhooks libraries. Equals `secret` for a generated "
            "secret. Shown only in this answer."
        ),
    ]

    @classmethod
    def with_secret(
        cls, w: WebhookRow, h: WebhookHealthRow | None, secret: str
    ) -> WebhookWithSecret:
        return cls(
            **_webhook_fields(w),
            **_health_fields(h),
            secret=secret,
            standard_webhooks_secret=standard_webhooks_secret(secret),
        )


def _health_fields(h: WebhookHealthRow | None) -> Any:
    return {
        "disabled_reason": None if h is None else h.disabled_reason,
        "disabled_at": None if h is None else instant_or_none(h.disabled_at),
        "delivery_stats": WebhookDeliveryStats.of(h),
    }


def _webhook_fields(w: WebhookRow) -> Any:
    return {
        "id": w.id,
        "url": w.url,
        "tenant_id": w.tenant_id,
        "events": w.events,
        "description": w.description,
        "active": w.active,
        "include_descendants": w.include_descendants,
        "created_at": instant(w.created_at),
        "updated_at": instant(w.updated_at),
    }


class WebhookTestResult(View):
    success: bool
    response_code: int
    duration_ms: float
    # Only when the attempt failed.
    error: str | msgspec.UnsetType = msgspec.UNSET


class Delivery(View):
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

    @classmethod
    def of(cls, d: DeliveryRow) -> Delivery:
        return cls(**_delivery_fields(d))


def _delivery_fields(d: DeliveryRow) -> Any:
    return {
        "id": d.id,
        "webhook_id": d.webhook_id,
        "event_id": d.event_id,
        "event_type": d.event_type,
        "status": d.status,
        "attempts": d.attempts,
        "max_attempts": d.max_attempts,
        "next_attempt_at": instant_or_none(d.next_attempt_at),
        "last_attempt_at": instant_or_none(d.last_attempt_at),
        "last_response_code": d.last_response_code,
        "last_error": d.last_error,
        "created_at": instant(d.created_at),
        "updated_at": instant(d.updated_at),
    }


class DeliveryPage(View):
    data: list[Delivery]
    next_cursor: UUID | None
    has_more: bool


class DeliveryWebhook(View):
    id: UUID
    url: str
    tenant_id: UUID | None


class DeliveryEvent(View):
    id: UUID
    type: str
    tenant_id: UUID | None
    payload: dict[str, Any]
    created_at: Instant


class FailedDelivery(Delivery):
    webhook: DeliveryWebhook
    event: DeliveryEvent

    @classmethod
    def failed(cls, f: FailedDeliveryRow) -> FailedDelivery:
        d = f.delivery
        return cls(
            **_delivery_fields(d),
            webhook=DeliveryWebhook(
                id=d.webhook_id, url=f.webhook_url, tenant_id=f.webhook_tenant_id
            ),
            event=DeliveryEvent(
                id=d.event_id,
                type=d.event_type,
                tenant_id=f.event_tenant_id,
                payload=f.event_payload,
                created_at=instant(f.event_created_at),
            ),
        )


class DeliveryStats(View):
    total: int
    pending: int
    success: int
    failed: int

    @classmethod
    def of(cls, s: DeliveryStatsRow) -> DeliveryStats:
        return cls(total=s.total, pending=s.pending, success=s.success, failed=s.failed)


class RetryAllResult(View):
    retried: int


class RetryResult(View):
    success: bool


class RecoverResult(View):
    requeued: int
