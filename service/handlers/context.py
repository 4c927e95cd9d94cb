"""The resolved context of a tenant, with ETag and If-None-Match (docs/api.md, inheritance)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from service.base.errors import validation_error
from service.http.appkeys import use_cases
from service.http.middlewares.exchange import principal_of
from service.http.requests import parse_query, path_uuid
from service.http.responses import json_response, rendered_response
from service.http.routing import FRESH_GET, Api
from service.schemas.history import ContextDiffQuery, ContextQuery, moment_of, parse_moment
from service.views.entries import TenantContext
from service.views.history import ContextDiff

api = Api("context")
# Both reads may name a moment of the history.
ERRORS = (
    "VALIDATION_ERROR",
    "TENANT_NOT_FOUND",
    "TENANT_ARCHIVED",
    "HISTORY_UNAVAILABLE",
    "INSUFFICIENT_SCOPE",
)


@api.route(
    "GET", "/api/v1/tenants/{id}/context",
    summary="Config and permissions after inheritance (ETag; If-None-Match answers 304)",
    query=ContextQuery, response=TenantContext, extra=FRESH_GET,
    errors=ERRORS,
)  # fmt: skip
async def get_context(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, ContextQuery)
    named = moment_of(query.as_of, query.revision)
    if named is not None:
        moment, field = named
        if query.reveal:
            raise validation_error("reveal", "history answers are masked: no reveal with a moment")
        then = await use_cases(request).context_history.context_at(
            principal_of(request), tenant_id, moment, field
        )
        return rendered_response(request, then)
    rendered = await use_cases(request).tenant_context.rendered(
        principal_of(request), tenant_id, reveal=query.reveal
    )
    # Revealed secrets stay out of caches.
    headers = {"Cache-Control": "no-store"} if query.reveal else {}
    return rendered_response(request, rendered, headers=headers)


@api.route(
    "GET", "/api/v1/tenants/{id}/context/diff",
    summary="What changed in the context between two moments (times or revisions), and why",
    query=ContextDiffQuery, response=ContextDiff,
    errors=ERRORS,
)  # fmt: skip
async def get_context_diff(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, ContextDiffQuery)
    diff = await use_cases(request).context_history.diff(
        principal_of(request),
        tenant_id,
        parse_moment(query.from_, "from"),
        parse_moment(query.to, "to"),
    )
    return json_response(msgspec.convert(diff, ContextDiff))
