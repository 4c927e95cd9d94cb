"""The resolved context of a tenant, with ETag and If-None-Match (DESIGN.md section 4)."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import TENANT_CONTEXT
from service.http.middleware import principal_of
from service.http.requests import parse_query, path_uuid
from service.http.routing import Api
from service.schemas.config import RevealQuery

api = Api("context")


def _weak(tag: str) -> str:
    return tag[2:] if tag.startswith("W/") else tag


def none_match(header: str | None, current: str) -> bool:
    """RFC 9110 If-None-Match: true when the client's copy is current (weak comparison)."""
    if header is None:
        return False
    candidates = [_weak(part.strip()) for part in header.split(",")]
    return "*" in candidates or _weak(current) in candidates


@api.route(
    "GET", "/api/v1/tenants/{id}/context",
    summary="Config and permissions after inheritance (ETag; If-None-Match answers 304)",
    query=RevealQuery, response="TenantContext", extra={"responses": {304: None}},
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "INSUFFICIENT_SCOPE"),
)  # fmt: skip
async def get_context(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, RevealQuery)
    rendered = await request.app[TENANT_CONTEXT].rendered(
        principal_of(request), tenant_id, reveal=query.reveal
    )
    headers = {"ETag": rendered.etag}
    if query.reveal:
        headers["Cache-Control"] = "no-store"  # revealed secrets stay out of caches
    if none_match(request.headers.get("If-None-Match"), headers["ETag"]):
        return web.Response(status=304, headers=headers)
    return web.Response(body=rendered.body, headers=headers, content_type="application/json")
