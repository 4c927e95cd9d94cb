"""The JSON shapes of webhooks and deliveries (DESIGN.md section 6). Never a secret,
except the one `secret` field the create and rotate answers add themselves."""

from __future__ import annotations

from typing import Any

from service.repositories.deliveries import Delivery, DeliveryStats, FailedDelivery
from service.repositories.webhooks import Webhook
from service.timefmt import iso, iso_or_none


def _id(value: object | None) -> str | None:
    return None if value is None else str(value)


def webhook_json(w: Webhook) -> dict[str, Any]:
    return {
        "id": str(w.id),
        "url": w.url,
        "tenant_id": _id(w.tenant_id),
        "events": w.events,
        "description": w.description,
        "active": w.active,
        "include_descendants": w.include_descendants,
        "created_at": iso(w.created_at),
        "updated_at": iso(w.updated_at),
    }


def delivery_json(d: Delivery) -> dict[str, Any]:
    return {
        "id": str(d.id),
        "webhook_id": str(d.webhook_id),
        "event_id": str(d.event_id),
        "event_type": d.event_type,
        "status": d.status,
        "attempts": d.attempts,
        "max_attempts": d.max_attempts,
        "next_attempt_at": iso_or_none(d.next_attempt_at),
        "last_attempt_at": iso_or_none(d.last_attempt_at),
        "last_response_code": d.last_response_code,
        "last_error": d.last_error,
        "created_at": iso(d.created_at),
        "updated_at": iso(d.updated_at),
    }


def failed_delivery_json(f: FailedDelivery) -> dict[str, Any]:
    d = f.delivery
    return {
        **delivery_json(d),
        "webhook": {
            "id": str(d.webhook_id),
            "url": f.webhook_url,
            "tenant_id": _id(f.webhook_tenant_id),
        },
        "event": {
            "id": str(d.event_id),
            "type": d.event_type,
            "tenant_id": _id(f.event_tenant_id),
            "payload": f.event_payload,
            "created_at": iso(f.event_created_at),
        },
    }


def stats_json(s: DeliveryStats) -> dict[str, int]:
    return {"total": s.total, "pending": s.pending, "success": s.success, "failed": s.failed}
