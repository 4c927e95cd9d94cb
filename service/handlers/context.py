"""The resolved context of a tenant, with ETag and If-None-Match (docs/api.md, inheritance)."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middleware import principal_of
from service.http.requests import parse_query, path_uuid
from service.http.responses import rendered_response
from service.http.routing import FRESH_GET, Api
from service.schemas.config import RevealQuery
from service.views.entries import TenantContext

api = Api("context")


@api.route(
    "GET", "/api/v1/tenants/{id}/context",
    summary="Config and permissions after inheritance (ETag; If-None-Match answers 304)",
    query=RevealQuery, response=TenantContext, extra=FRESH_GET,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "INSUFFICIENT_SCOPE"),
)  # fmt: skip
async def get_context(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, RevealQuery)
    rendered = await use_cases(request).tenant_context.rendered(
        principal_of(request), tenant_id, reveal=query.reveal
    )
    # Revealed secrets stay out of caches.
    headers = {"Cache-Control": "no-store"} if query.reveal else {}
    return rendered_response(request, rendered, headers=headers)
