"""The front door, liveness and readiness, without credentials."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import DATABASE, MIGRATION_HEAD, REPOSITORIES
from service.http.responses import json_response
from service.http.routing import Api
from service.views.probes import Health, Index, Readiness

api = Api("operations")

# GET / answers where to go: a person lands on the console, a program on the OpenAPI
# document (docs/decisions/runtime.md, "First contact").
INDEX = {
    "service": "tenant-hierarchy-service",
    "console": "/console",
    "openapi": "/api/v1/openapi.json",
    "health": "/health",
    "documentation": "docs/api.md in the repository; the OpenAPI document describes every endpoint",
}


@api.route(
    "GET", "/", summary="Where to go: the console and the OpenAPI document", response=Index,
    public=True,
)  # fmt: skip
async def index(request: web.Request) -> web.Response:
    return json_response(INDEX)


@api.route("GET", "/health", summary="Liveness: the process answers", response=Health, public=True)
async def health(request: web.Request) -> web.Response:
    return json_response({"status": "ok"})


@api.route(
    "GET", "/ready", summary="Readiness: database reachable and migrated", public=True,
    response=Readiness, errors=("SERVICE_UNAVAILABLE",),
    extra={"responses": {503: Readiness}, "headers": {503: ("Retry-After",)}},
)  # fmt: skip
async def ready(request: web.Request) -> web.Response:
    repos = request.app[REPOSITORIES]
    expected = request.app[MIGRATION_HEAD]
    try:
        async with request.app[DATABASE].connection() as conn:
            await repos.health.ping(conn)
            applied = await repos.migrations.latest_migration_version(conn)
    except Exception:
        return json_response(
            {"status": "unavailable", "database": "unreachable"},
            status=503,
            headers={"Retry-After": "1"},
        )
    if applied is None or applied < expected:
        return json_response(
            {"status": "unavailable", "database": "migrations pending"},
            status=503,
            headers={"Retry-After": "5"},
        )
    return json_response({"status": "ok", "database": "ok", "migration": applied})
