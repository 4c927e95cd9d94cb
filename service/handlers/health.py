"""The front door, liveness and readiness, without credentials."""

from __future__ import annotations

import asyncio

import asyncpg
from aiohttp import web

from service.http.appkeys import DATABASE, MIGRATION_HEAD, REPOSITORIES
from service.http.responses import json_response
from service.http.routing import Api
from service.views.probes import Health, Index, Readiness, ReadReadiness

api = Api("operations")
PRIMARY_GLANCE_SECONDS = 0.5

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
    "GET", "/ready", summary="Readiness for writes: the primary reachable and migrated",
    public=True, response=Readiness, errors=("SERVICE_UNAVAILABLE",),
    extra={"responses": {503: Readiness}, "headers": {503: ("Retry-After",)}},
)  # fmt: skip
async def ready(request: web.Request) -> web.Response:
    state, applied = await _primary_state(request)
    if state == "unreachable":
        return json_response(
            {"status": "unavailable", "database": "unreachable"},
            status=503,
            headers={"Retry-After": "1"},
        )
    if state == "migrations pending":
        return json_response(
            {"status": "unavailable", "database": "migrations pending"},
            status=503,
            headers={"Retry-After": "5"},
        )
    return json_response({"status": "ok", "database": "ok", "migration": applied})


@api.route(
    "GET", "/ready/reads",
    summary="Readiness for reads: the primary, or else a usable replica, answers reads",
    public=True, response=ReadReadiness, errors=("SERVICE_UNAVAILABLE",),
    extra={"responses": {503: ReadReadiness}, "headers": {503: ("Retry-After",)}},
)  # fmt: skip
async def ready_for_reads(request: web.Request) -> web.Response:
    # With a replica to answer reads, the primary gets a short look only: a balancer's
    # check must not time out while PgBouncer queues the probe for a primary that is away.
    usable_replica = request.app[DATABASE].replicas.usable()
    state, _ = await _primary_state(request, PRIMARY_GLANCE_SECONDS if usable_replica else None)
    writes = "ok" if state == "ok" else "unavailable"
    if state == "ok":
        reads = "primary"
    elif usable_replica:
        reads = "replica"  # reads without a consistency token go on during the outage
    else:
        return json_response(
            {"status": "unavailable", "reads": "unavailable", "writes": writes},
            status=503,
            headers={"Retry-After": "1"},
        )
    return json_response({"status": "ok", "reads": reads, "writes": writes})


async def _primary_state(
    request: web.Request, within: float | None = None
) -> tuple[str, int | None]:
    """("ok" | "unreachable" | "migrations pending", the latest migration applied).
    On the readiness probe's own connection: a busy pool is not an unready database."""
    repos = request.app[REPOSITORIES]
    expected = request.app[MIGRATION_HEAD]

    async def check(conn: asyncpg.Connection) -> int | None:
        await repos.health.ping(conn)
        return await repos.migrations.latest_migration_version(conn)

    try:
        applied = await asyncio.wait_for(request.app[DATABASE].probe.run(check), within)
    except Exception:
        return "unreachable", None
    if applied is None or applied < expected:
        return "migrations pending", applied
    return "ok", applied
