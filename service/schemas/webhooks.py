"""Webhook and delivery request bodies and query strings."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.schemas.common import NO_NUL, Strict, check_text
from service.schemas.times import AwareDatetime, check_utc
from service.webhooks.signing import MAX_SECRET_LENGTH, MIN_SECRET_LENGTH, check_secret

# The event types of docs/api.md, Webhooks.
EventType = Literal[
    "tenant.created",
    "tenant.updated",
    "tenant.deleted",
    "tenant.restored",
    "tenant.moved",
    "tenant.protected",
    "tenant.unprotected",
    "change_request.created",
    "change_request.submitted",
    "change_request.approved",
    "change_request.rejected",
    "change_request.cancelled",
    "change_request.drifted",
    "change_request.applied",
    "change_request.failed",
    "config.updated",
    "config.deleted",
    "permission.created",
    "permission.updated",
    "permission.deleted",
    # value schemas and budgets of config keys (docs/constraints.md)
    "config_schema.declared",
    "config_schema.deleted",
    "config_budget.declared",
    "config_budget.deleted",
    # another endpoint was disabled for failing (docs/decisions/webhooks.md "Endpoint health")
    "webhook.disabled",
]
# Sent on request by POST /api/v1/webhooks/{id}/test; not an event one subscribes to.
TEST_EVENT = "webhook.test"
DeliveryStatus = Literal["pending", "success", "failed"]
MAX_DESCRIPTION = 1000

# What service/webhooks/urlguard.py refuses before any lookup, said in the document: https
# (http only where WEBHOOK_ALLOW_HTTP), no whitespace or control characters, no user@, no
# #fragment. Whether the host is public is known only by resolving it (400
# UNSAFE_WEBHOOK_URL), so the document cannot say that part.
URL_PATTERN = r"^[Hh][Tt][Tt][Pp][Ss]://[^\s/?#@\\\x00-\x1f\x7f]+(?:[/?][^\s#\x00-\x1f\x7f]*)?$"
WebhookUrl = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=2048,
        extra_json_schema={"format": "uri", "pattern": URL_PATTERN},
    ),
]
# Repeats are allowed and dropped (an event is delivered once per webhook either way).
EventList = Annotated[list[EventType], msgspec.Meta(min_length=1, max_length=100)]
# Any text within these lengths (service/webhooks/signing.py: how it keys each header).
Secret = Annotated[
    str,
    msgspec.Meta(
        min_length=MIN_SECRET_LENGTH,
        max_length=MAX_SECRET_LENGTH,
        description=(
            "Any text of 1 to 1024 characters: X-Service-Signature is keyed with its UTF-8 "
            "bytes. The Standard Webhooks key is what a `whsec_` text base64-decodes to, "
            "otherwise the same UTF-8 bytes; answers that set a secret give that key's "
            "`whsec_` form in `standard_webhooks_secret`. Generated when left out."
        ),
    ),
]
Description = Annotated[str, msgspec.Meta(max_length=MAX_DESCRIPTION, extra_json_schema=NO_NUL)]


def unique_events(events: list[str]) -> list[str]:
    return list(dict.fromkeys(events))


def _check_secret(secret: str) -> None:
    try:
        check_secret(secret)
    except ValueError as exc:
        raise ValueError(f"secret: {exc}") from None


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


class RecoverBody(Strict):
    """POST /webhooks/{id}/recover: re-queue the failed deliveries created since then."""

    since: AwareDatetime

    def __post_init__(self) -> None:
        check_utc(self.since, "since")
