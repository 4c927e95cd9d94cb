"""Protected subtrees: mark a tenant so changes at it or below go through change
requests (docs/change-requests.md). Admin routes."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import path_uuid
from service.http.responses import json_response
from service.http.routing import Api
from service.views.changes import TenantProtection

api = Api("change-requests")
ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")


@api.route(
    "POST", "/api/v1/tenants/{id}/protect",
    summary="Protect a subtree: direct writes at the tenant or below answer 409 "
    "CHANGE_REQUEST_REQUIRED",
    response=TenantProtection, errors=ERRORS,
)  # fmt: skip
async def protect_tenant(request: web.Request) -> web.Response:
    found = await use_cases(request).tenant_protection.protect(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return json_response(TenantProtection.of(found))


@api.route(
    "POST", "/api/v1/tenants/{id}/unprotect",
    summary="Unprotect a tenant (a protected tenant above still protects it)",
    status=204, errors=ERRORS,
)  # fmt: skip
async def unprotect_tenant(request: web.Request) -> web.Response:
    await use_cases(request).tenant_protection.unprotect(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return web.Response(status=204)
