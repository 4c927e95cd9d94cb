"""Contexts for an application's memory (docs/context-delivery.md): the stream of
context changes of a subtree (Server-Sent Events, resumable), hydration (every context
of a subtree with the revision it reflects) and batch reads of named tenants."""

from __future__ import annotations

import re

from aiohttp import web

from service.base.errors import FieldError, ServiceError
from service.http.appkeys import (
    AUTHENTICATOR,
    CONTEXT_STREAMS,
    HEAVY_READS,
    REVISION_FEED,
    SETTINGS,
    STOPPING,
    use_cases,
)
from service.http.event_streams import serve_stream
from service.http.middlewares.exchange import principal_of
from service.http.requests import parse_query, path_uuid, read_body
from service.http.responses import raw_json_response
from service.http.routing import Api
from service.http.streaming import stream_json_array
from service.schemas.contexts import ContextBatch, ContextChangesQuery
from service.usecases.tenants.context_delivery import LAST_INDEX
from service.views.contexts import ContextBatchResult, ContextStreamEvent
from service.views.entries import TenantContext

api = Api("context delivery")
_EVENT_ID = re.compile(r"(\d{1,18})(?::(\d{1,9}))?")
TENANT_ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "INSUFFICIENT_SCOPE")


def _position(request: web.Request, query: ContextChangesQuery) -> tuple[int, int] | None:
    """Last-Event-ID (`<revision>:<index>`, or a bare revision) wins over ?since=."""
    raw = request.headers.get("Last-Event-ID")
    if raw is not None and raw.strip():
        match = _EVENT_ID.fullmatch(raw.strip())
        if match is None or int(match.group(2) or 0) > LAST_INDEX:
            raise ServiceError(
                "VALIDATION_ERROR",
                "Last-Event-ID is not an event id of this stream",
                details=[FieldError("Last-Event-ID", "must be <revision>:<index>")],
            )
        index = LAST_INDEX if match.group(2) is None else int(match.group(2))
        return int(match.group(1)), index
    if query.since is not None:
        return query.since, LAST_INDEX
    return None


@api.route(
    "GET", "/api/v1/tenants/{id}/context-changes",
    summary="Stream of context changes of a subtree (Server-Sent Events; resume with "
    "Last-Event-ID or since)",
    query=ContextChangesQuery, response=ContextStreamEvent,
    extra={
        "content_type": "text/event-stream",
        "headers": {200: ("X-Revision",)},
        "request_headers": ("Last-Event-ID",),
        "responses": {429: None, 503: None},
    },
    errors=(*TENANT_ERRORS, "RATE_LIMITED", "SERVICE_UNAVAILABLE"),
)  # fmt: skip
async def stream_context_changes(request: web.Request) -> web.StreamResponse:
    tenant_id = path_uuid(request)
    query = parse_query(request, ContextChangesQuery)
    position = _position(request, query)
    principal = principal_of(request)
    delivery = use_cases(request).context_delivery
    settings = request.app[SETTINGS]
    async with request.app[CONTEXT_STREAMS].slot(principal.actor_id):
        start = await delivery.open_stream(principal, tenant_id, position)
        return await serve_stream(
            request,
            start,
            delivery,
            request.app[REVISION_FEED],
            heartbeat_seconds=settings.context_stream_heartbeat_seconds,
            max_seconds=settings.context_stream_max_seconds,
            stopping=request.app[STOPPING],
            still_admitted=lambda: _still_admitted(request),
        )


async def _still_admitted(request: web.Request) -> bool:
    """Whether the stream's credential still admits it (its rate limit is not charged)."""
    return await request.app[AUTHENTICATOR].still_admits(
        request.headers.get("X-API-Key"), request.headers.get("Authorization")
    )


@api.route(
    "GET", "/api/v1/tenants/{id}/contexts",
    summary="Every resolved context of a subtree, streamed, with the revision it reflects",
    response=list[TenantContext], extra={"headers": {200: ("X-Revision",)}},
    errors=(*TENANT_ERRORS, "RATE_LIMITED", "SERVICE_UNAVAILABLE"),
)  # fmt: skip
async def list_subtree_contexts(request: web.Request) -> web.StreamResponse:
    tenant_id = path_uuid(request)
    principal = principal_of(request)
    delivery = use_cases(request).context_delivery
    # A whole subtree: bounded like whole descendants lists (429 / 503 with Retry-After).
    async with (
        request.app[HEAVY_READS].slot(principal.actor_id),
        delivery.hydrate(principal, tenant_id) as (revision, chunks),
    ):
        return await stream_json_array(request, chunks, headers={"X-Revision": str(revision)})


@api.route(
    "POST", "/api/v1/contexts/batch",
    summary="Resolved contexts of up to 1,000 named tenants (the others listed as not found)",
    body=ContextBatch, response=ContextBatchResult, writes=False, read_scope=True,
    extra={"headers": {200: ("X-Revision",)}},
    errors=("VALIDATION_ERROR", "INSUFFICIENT_SCOPE"),
)  # fmt: skip
async def batch_contexts(request: web.Request) -> web.Response:
    body = await read_body(request, ContextBatch)
    found = await use_cases(request).context_delivery.batch(principal_of(request), body.tenant_ids)
    return raw_json_response(found.body, headers={"X-Revision": str(found.revision)})
