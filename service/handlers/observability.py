"""The OpenAPI document and the Prometheus metrics, both without credentials."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import DATABASE, ENDPOINTS, METRICS, OPENAPI, REPOSITORIES
from service.http.routing import Api
from service.logs import get_logger

api = Api("operations")
log = get_logger("service.metrics")


@api.route(
    "GET", "/api/v1/openapi.json", summary="This API as an OpenAPI 3.1 document",
    response="OpenApiDocument", public=True,
)  # fmt: skip
async def openapi_document(request: web.Request) -> web.Response:
    body = request.app[OPENAPI].body(request.app[ENDPOINTS].values())
    return web.Response(body=body, content_type="application/json")


@api.route(
    "GET", "/metrics", summary="Prometheus metrics (text exposition format)",
    response="MetricsText", public=True, extra={"content_type": "text/plain"},
)  # fmt: skip
async def metrics(request: web.Request) -> web.Response:
    app = request.app
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
