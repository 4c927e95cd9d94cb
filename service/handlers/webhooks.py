"""Webhook and delivery endpoints of the spec plus rotate-secret (DESIGN.md section 6)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from service.http.appkeys import DELIVERY_ADMIN, WEBHOOK_CHANGES, WEBHOOK_QUERIES, WEBHOOK_TESTING
from service.http.middleware import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body, read_optional_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.webhooks import (
    DeliveriesQuery,
    DeliveryStatsQuery,
    FailedDeliveriesQuery,
    ListWebhooksQuery,
    RetryAllQuery,
    SecretRotation,
    WebhookCreate,
    WebhookPatch,
)
from service.usecases.webhook_changes import WebhookWithSecret
from service.webhooks.representation import (
    delivery_json,
    failed_delivery_json,
    stats_json,
    webhook_json,
)

api = Api("webhooks")
WEBHOOK_ERRORS = ("VALIDATION_ERROR", "WEBHOOK_NOT_FOUND")


def _with_secret(created: WebhookWithSecret) -> dict[str, Any]:
    # The only answers that carry the secret: create and rotate-secret.
    return {**webhook_json(created.webhook), "secret": created.secret}


@api.route(
    "POST", "/api/v1/webhooks", summary="Create a webhook (the answer carries its secret once)",
    body=WebhookCreate, response="WebhookWithSecret", status=201,
    errors=("VALIDATION_ERROR", "UNSAFE_WEBHOOK_URL", "TENANT_NOT_FOUND", "TENANT_ARCHIVED",
            "TENANT_ACCESS_DENIED"),
)  # fmt: skip
async def create_webhook(request: web.Request) -> web.Response:
    body = await read_body(request, WebhookCreate)
    created = await request.app[WEBHOOK_CHANGES].create(
        principal_of(request), actor_of(request), body
    )
    return json_response(
        _with_secret(created),
        status=201,
        headers={"Location": f"/api/v1/webhooks/{created.webhook.id}"},
    )


@api.route(
    "GET", "/api/v1/webhooks", summary="List webhooks (a scoped caller sees its subtree's)",
    query=ListWebhooksQuery, response="WebhookList",
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_webhooks(request: web.Request) -> web.Response:
    query = parse_query(request, ListWebhooksQuery)
    webhooks = await request.app[WEBHOOK_QUERIES].list(principal_of(request), query)
    return json_response([webhook_json(w) for w in webhooks])


@api.route(
    "GET", "/api/v1/webhooks/deliveries/stats", summary="Delivery counts by status",
    query=DeliveryStatsQuery, response="DeliveryStats", errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def delivery_stats(request: web.Request) -> web.Response:
    query = parse_query(request, DeliveryStatsQuery)
    stats = await request.app[DELIVERY_ADMIN].stats(principal_of(request), query.webhook_id)
    return json_response(stats_json(stats))


@api.route(
    "GET", "/api/v1/webhooks/deliveries/failed",
    summary="Dead letters, newest first, with their webhook and event",
    query=FailedDeliveriesQuery, response="FailedDeliveryList", errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def failed_deliveries(request: web.Request) -> web.Response:
    query = parse_query(request, FailedDeliveriesQuery)
    rows, next_cursor = await request.app[DELIVERY_ADMIN].failed(principal_of(request), query)
    headers = {} if next_cursor is None else {"X-Next-Cursor": str(next_cursor)}
    return json_response([failed_delivery_json(r) for r in rows], headers=headers)


@api.route(
    "POST", "/api/v1/webhooks/deliveries/retry-all",
    summary="Every failed delivery back to pending, attempts cleared",
    query=RetryAllQuery, response="RetryAllResult", errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def retry_all_deliveries(request: web.Request) -> web.Response:
    query = parse_query(request, RetryAllQuery)
    retried = await request.app[DELIVERY_ADMIN].retry_all(
        principal_of(request), actor_of(request), query.webhook_id
    )
    return json_response({"retried": retried})


@api.route(
    "POST", "/api/v1/webhooks/deliveries/{deliveryId}/retry",
    summary="A failed delivery back to pending (success false when it was not failed)",
    response="RetryResult", errors=("VALIDATION_ERROR", "DELIVERY_NOT_FOUND"),
)  # fmt: skip
async def retry_delivery(request: web.Request) -> web.Response:
    delivery_id = path_uuid(request, "deliveryId")
    success = await request.app[DELIVERY_ADMIN].retry(
        principal_of(request), actor_of(request), delivery_id
    )
    return json_response({"success": success})


@api.route(
    "GET", "/api/v1/webhooks/{id}", summary="Get a webhook", response="Webhook",
    errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def get_webhook(request: web.Request) -> web.Response:
    webhook = await request.app[WEBHOOK_QUERIES].get(principal_of(request), path_uuid(request))
    return json_response(webhook_json(webhook))


@api.route(
    "PATCH", "/api/v1/webhooks/{id}",
    summary="Change url, events, secret, description, active or include_descendants",
    body=WebhookPatch, response="Webhook", errors=(*WEBHOOK_ERRORS, "UNSAFE_WEBHOOK_URL"),
)  # fmt: skip
async def update_webhook(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    patch = await read_body(request, WebhookPatch)
    webhook = await request.app[WEBHOOK_CHANGES].update(
        principal_of(request), actor_of(request), webhook_id, patch
    )
    return json_response(webhook_json(webhook))


@api.route(
    "DELETE", "/api/v1/webhooks/{id}", summary="Delete a webhook and its deliveries",
    status=204, errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def delete_webhook(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    await request.app[WEBHOOK_CHANGES].delete(principal_of(request), actor_of(request), webhook_id)
    return web.Response(status=204)


@api.route(
    "POST", "/api/v1/webhooks/{id}/test",
    summary="Send a signed webhook.test event now and report the answer",
    response="WebhookTestResult", errors=(*WEBHOOK_ERRORS, "UNSAFE_WEBHOOK_URL"),
)  # fmt: skip
async def test_webhook(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    outcome = await request.app[WEBHOOK_TESTING].test(
        principal_of(request), actor_of(request), webhook_id
    )
    return json_response(outcome)


@api.route(
    "POST", "/api/v1/webhooks/{id}/rotate-secret",
    summary="New secret (returned once); the old one also signs for 24 hours",
    body=SecretRotation, response="WebhookWithSecret", errors=WEBHOOK_ERRORS,
    extra={"body_required": False},
)  # fmt: skip
async def rotate_webhook_secret(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    body = await read_optional_body(request, SecretRotation)
    rotated = await request.app[WEBHOOK_CHANGES].rotate_secret(
        principal_of(request), actor_of(request), webhook_id, body
    )
    return json_response(_with_secret(rotated))


@api.route(
    "GET", "/api/v1/webhooks/{id}/deliveries",
    summary="A webhook's deliveries, newest first (keyset pages)",
    query=DeliveriesQuery, response="DeliveryPage", errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def list_deliveries(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    query = parse_query(request, DeliveriesQuery)
    page = await request.app[DELIVERY_ADMIN].history(principal_of(request), webhook_id, query)
    return json_response(
        {
            "data": [delivery_json(d) for d in page.items],
            "next_cursor": None if page.next_cursor is None else str(page.next_cursor),
            "has_more": page.has_more,
        }
    )
