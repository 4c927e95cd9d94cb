"""The OpenAPI document (no credentials) and the Prometheus metrics (METRICS_TOKEN on
this port; service/observability/metrics_listener.py serves them on METRICS_PORT)."""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web

from service.base.errors import ServiceError
from service.http.appkeys import DATABASE, ENDPOINTS, METRICS, OPENAPI, REPOSITORIES, SETTINGS
from service.http.routing import Api
from service.observability.logs import get_logger

api = Api("operations")
log = get_logger("service.metrics")


@api.route(
    "GET", "/api/v1/openapi.json", summary="This API as an OpenAPI 3.1 document",
    response=dict[str, Any], public=True,
)  # fmt: skip
async def openapi_document(request: web.Request) -> web.Response:
    body = request.app[OPENAPI].body(request.app[ENDPOINTS].values())
    return web.Response(body=body, content_type="application/json")


@api.route(
    "GET", "/metrics",
    summary="Prometheus metrics (text exposition format); 404 unless METRICS_TOKEN is set "
    "and sent as Authorization: Bearer <METRICS_TOKEN>",
    response=str, public=True, errors=("NOT_FOUND",),
    extra={"content_type": "text/plain"},
)  # fmt: skip
async def metrics(request: web.Request) -> web.Response:
    # On the API port metrics exist only for a scraper holding METRICS_TOKEN; everyone
    # else gets the answer of a route that does not exist.
    if not token_presented(request, request.app[SETTINGS].metrics_token, required=True):
        raise ServiceError("NOT_FOUND", f"no route for {request.path}")
    return await scrape(request.app)


def token_presented(request: web.Request, token: str | None, *, required: bool) -> bool:
    """Whether the request carries METRICS_TOKEN (or none is needed: not required and unset)."""
    if token is None:
        return not required
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    # Bytes: compare_digest refuses str holding non-ASCII, which a header may carry.
    sent = given.strip().encode("utf-8", "surrogateescape")
    return scheme.lower() == "bearer" and hmac.compare_digest(sent, token.encode())


async def scrape(app: web.Application) -> web.Response:
    """The exposition of every worker's figures; the database part costs two bounded
    index scans (service.metrics.COUNT_CAP), whatever the tables hold."""
    recorder = app[METRICS]
    database = app[DATABASE]
    pool = database.pool if database.is_open else None
    if pool is not None:
        recorder.set_pool(pool.get_size(), pool.get_idle_size(), pool.get_max_size())
    try:
        async with database.connection() as conn:
            deliveries = await app[REPOSITORIES].metrics.count_deliveries_by_status(conn)
    except Exception as exc:  # a scrape still answers while the database is away
        log.warning("metrics without database figures", error=type(exc).__name__)
        deliveries = None
    recorder.set_database(deliveries)
    response = web.Response(body=recorder.exposition())
    # prometheus_client's content type carries its own parameters (version, charset).
    response.headers["Content-Type"] = recorder.content_type
    return response
