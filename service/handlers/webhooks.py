"""Webhook and delivery endpoints, rotate-secret included (docs/api.md, Webhooks)."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body, read_optional_body
from service.http.responses import json_response, next_page, page_response
from service.http.routing import Api
from service.repositories.webhooks import WebhookRow
from service.schemas.webhooks import (
    DeliveriesQuery,
    DeliveryStatsQuery,
    FailedDeliveriesQuery,
    ListWebhooksQuery,
    RecoverBody,
    RetryAllQuery,
    SecretRotation,
    WebhookCreate,
    WebhookPatch,
)
from service.usecases.webhooks.changes import CreatedWebhook
from service.views.webhooks import (
    Delivery,
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

api = Api("webhooks")
WEBHOOK_ERRORS = ("VALIDATION_ERROR", "WEBHOOK_NOT_FOUND")


async def answers(request: web.Request, webhooks: list[WebhookRow]) -> list[Webhook]:
    """Webhooks as the API answers them: with their disabling reason and statistics."""
    health = await use_cases(request).webhook_health.of([w.id for w in webhooks])
    return [Webhook.answer(w, health.get(w.id)) for w in webhooks]


async def answer(request: web.Request, webhook: WebhookRow) -> Webhook:
    return (await answers(request, [webhook]))[0]


async def _with_secret(request: web.Request, created: CreatedWebhook) -> WebhookWithSecret:
    # The only answers that carry the secret: create and rotate-secret.
    health = await use_cases(request).webhook_health.of([created.webhook.id])
    return WebhookWithSecret.with_secret(
        created.webhook, health.get(created.webhook.id), created.secret
    )


@api.route(
    "POST", "/api/v1/webhooks", summary="Create a webhook (the answer carries its secret once)",
    body=WebhookCreate, response=WebhookWithSecret, status=201,
    extra={"headers": {201: ("Location",)}},
    errors=("VALIDATION_ERROR", "UNSAFE_WEBHOOK_URL", "TENANT_NOT_FOUND", "TENANT_ARCHIVED",
            "TENANT_ACCESS_DENIED"),
)  # fmt: skip
async def create_webhook(request: web.Request) -> web.Response:
    body = await read_body(request, WebhookCreate)
    created = await use_cases(request).webhook_changes.create(
        principal_of(request), actor_of(request), body
    )
    return json_response(
        await _with_secret(request, created),
        status=201,
        headers={"Location": f"/api/v1/webhooks/{created.webhook.id}"},
    )


@api.route(
    "GET", "/api/v1/webhooks", summary="List webhooks (a scoped caller sees its subtree's)",
    query=ListWebhooksQuery, response=list[Webhook],
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_webhooks(request: web.Request) -> web.Response:
    query = parse_query(request, ListWebhooksQuery)
    webhooks = await use_cases(request).webhook_queries.list(principal_of(request), query)
    return json_response(await answers(request, webhooks))


@api.route(
    "GET", "/api/v1/webhooks/deliveries/stats", summary="Delivery counts by status",
    query=DeliveryStatsQuery, response=DeliveryStats, errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def delivery_stats(request: web.Request) -> web.Response:
    query = parse_query(request, DeliveryStatsQuery)
    stats = await use_cases(request).delivery_admin.stats(principal_of(request), query.webhook_id)
    return json_response(DeliveryStats.of(stats))


@api.route(
    "GET", "/api/v1/webhooks/deliveries/failed",
    summary="Dead letters, newest first, with their webhook and event",
    query=FailedDeliveriesQuery, response=list[FailedDelivery], errors=WEBHOOK_ERRORS,
    extra={"headers": {200: ("X-Next-Cursor", "Link")}},
)  # fmt: skip
async def failed_deliveries(request: web.Request) -> web.Response:
    query = parse_query(request, FailedDeliveriesQuery)
    rows, next_cursor = await use_cases(request).delivery_admin.failed(principal_of(request), query)
    headers = next_page(request, next_cursor, cursor_header=True)
    return json_response([FailedDelivery.failed(r) for r in rows], headers=headers)


@api.route(
    "POST", "/api/v1/webhooks/deliveries/retry-all",
    summary="Every failed delivery back to pending, attempts cleared",
    query=RetryAllQuery, response=RetryAllResult, errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def retry_all_deliveries(request: web.Request) -> web.Response:
    query = parse_query(request, RetryAllQuery)
    retried = await use_cases(request).delivery_admin.retry_all(
        principal_of(request), actor_of(request), query.webhook_id
    )
    return json_response(RetryAllResult(retried=retried))


@api.route(
    "POST", "/api/v1/webhooks/deliveries/{deliveryId}/retry",
    summary="A failed delivery back to pending (success false when it was not failed)",
    response=RetryResult, errors=("VALIDATION_ERROR", "DELIVERY_NOT_FOUND"),
)  # fmt: skip
async def retry_delivery(request: web.Request) -> web.Response:
    delivery_id = path_uuid(request, "deliveryId")
    success = await use_cases(request).delivery_admin.retry(
        principal_of(request), actor_of(request), delivery_id
    )
    return json_response(RetryResult(success=success))


@api.route(
    "GET", "/api/v1/webhooks/{id}", summary="Get a webhook", response=Webhook,
    errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def get_webhook(request: web.Request) -> web.Response:
    webhook = await use_cases(request).webhook_queries.get(
        principal_of(request), path_uuid(request)
    )
    return json_response(await answer(request, webhook))


@api.route(
    "PATCH", "/api/v1/webhooks/{id}",
    summary="Change url, events, secret, description, active or include_descendants",
    body=WebhookPatch, response=Webhook, errors=(*WEBHOOK_ERRORS, "UNSAFE_WEBHOOK_URL"),
)  # fmt: skip
async def update_webhook(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    patch = await read_body(request, WebhookPatch)
    webhook = await use_cases(request).webhook_changes.update(
        principal_of(request), actor_of(request), webhook_id, patch
    )
    return json_response(await answer(request, webhook))


@api.route(
    "DELETE", "/api/v1/webhooks/{id}", summary="Delete a webhook and its deliveries",
    status=204, errors=WEBHOOK_ERRORS,
)  # fmt: skip
async def delete_webhook(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    await use_cases(request).webhook_changes.delete(
        principal_of(request), actor_of(request), webhook_id
    )
    return web.Response(status=204)


@api.route(
    "POST", "/api/v1/webhooks/{id}/test",
    summary="Send a signed webhook.test event now and report the answer",
    response=WebhookTestResult, errors=(*WEBHOOK_ERRORS, "UNSAFE_WEBHOOK_URL"),
)  # fmt: skip
async def test_webhook(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    outcome = await use_cases(request).webhook_testing.test(
        principal_of(request), actor_of(request), webhook_id
    )
    return json_response(outcome)


@api.route(
    "POST", "/api/v1/webhooks/{id}/rotate-secret",
    summary="New secret (returned once); the old one also signs for 24 hours",
    body=SecretRotation, response=WebhookWithSecret, errors=WEBHOOK_ERRORS,
    extra={"body_required": False},
)  # fmt: skip
async def rotate_webhook_secret(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    body = await read_optional_body(request, SecretRotation)
    rotated = await use_cases(request).webhook_changes.rotate_secret(
        principal_of(request), actor_of(request), webhook_id, body
    )
    return json_response(await _with_secret(request, rotated))


@api.route(
    "GET", "/api/v1/webhooks/{id}/deliveries",
    summary="A webhook's deliveries, newest first (keyset pages)",
    query=DeliveriesQuery, response=DeliveryPage, errors=WEBHOOK_ERRORS,
    extra={"headers": {200: ("Link",)}},
)  # fmt: skip
async def list_deliveries(request: web.Request) -> web.Response:
    webhook_id = path_uuid(request)
    query = parse_query(request, DeliveriesQuery)
    page = await use_cases(request).delivery_admin.history(principal_of(request), webhook_id, query)
    return page_response(request, DeliveryPage, [Delivery.of(d) for d in page.items], page)


@api.route(
    "POST", "/api/v1/webhooks/{id}/recover",
    summary="Re-queue the webhook's failed deliveries created since a time (after an outage)",
    body=RecoverBody, response=RecoverResult,
    errors=("VALIDATION_ERROR", "WEBHOOK_NOT_FOUND", "WEBHOOK_INACTIVE"),
)  # fmt: skip
async def recover_webhook(request: web.Request) -> web.Response:
    body = await read_body(request, RecoverBody)
    count = await use_cases(request).webhook_health.recover(
        principal_of(request), actor_of(request), path_uuid(request), body.since
    )
    return json_response(RecoverResult(requeued=count))
