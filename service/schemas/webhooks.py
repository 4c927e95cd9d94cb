"""Webhook and delivery request bodies and query strings."""

from __future__ import annotations

from typing import Annotated, Literal, get_args
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.schemas.common import Strict, check_text
from service.webhooks.signing import MAX_SECRET_LENGTH, MIN_SECRET_LENGTH, check_secret

# The spec's nine event types plus tenant.restored (DESIGN.md section 6).
EventType = Literal[
    "tenant.created",
    "tenant.updated",
    "tenant.deleted",
    "tenant.restored",
    "tenant.moved",
    "config.updated",
    "config.deleted",
    "permission.created",
    "permission.updated",
    "permission.deleted",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
DeliveryStatus = Literal["pending", "success", "failed"]
MAX_DESCRIPTION = 1000

WebhookUrl = Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
# Repeats are allowed and dropped (an event is delivered once per webhook either way).
EventList = Annotated[list[EventType], msgspec.Meta(min_length=1, max_length=100)]
Secret = Annotated[str, msgspec.Meta(min_length=MIN_SECRET_LENGTH, max_length=MAX_SECRET_LENGTH)]
Description = Annotated[str, msgspec.Meta(max_length=MAX_DESCRIPTION)]


def unique_events(events: list[str]) -> list[str]:
    return list(dict.fromkeys(events))


def _check_secret(secret: str) -> None:
    try:
        check_secret(secret)
    except ValueError as exc:
        raise ValueError(f"secret {exc}") from None


class WebhookCreate(Strict):
    url: WebhookUrl
    events: EventList
    tenant_id: UUID | None = None
    secret: Secret | None = None
    description: Description = ""
    active: bool = True
    include_descendants: bool = False

    def __post_init__(self) -> None:
        check_text(self.url, "url")
        check_text(self.description, "description")
        if self.secret is not None:
            _check_secret(self.secret)


class WebhookPatch(Strict):
    url: WebhookUrl | UnsetType = UNSET
    events: EventList | UnsetType = UNSET
    secret: Secret | UnsetType = UNSET
    description: Description | UnsetType = UNSET
    active: bool | UnsetType = UNSET
    include_descendants: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.url is not UNSET:
            check_text(self.url, "url")
        if self.description is not UNSET:
            check_text(self.description, "description")
        if self.secret is not UNSET:
            _check_secret(self.secret)


class SecretRotation(Strict):
    """Optional body of rotate-secret: a chosen secret instead of a generated one."""

    secret: Secret | None = None

    def __post_init__(self) -> None:
        if self.secret is not None:
            _check_secret(self.secret)


class ListWebhooksQuery(Strict):
    tenant_id: UUID | None = None


class DeliveriesQuery(Strict):
    cursor: UUID | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 50
    status: DeliveryStatus | None = None


class FailedDeliveriesQuery(Strict):
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 100
    cursor: UUID | None = None
    webhook_id: UUID | None = None


class DeliveryStatsQuery(Strict):
    webhook_id: UUID | None = None


class RetryAllQuery(Strict):
    webhook_id: UUID | None = None
