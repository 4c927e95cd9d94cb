"""GDPR endpoints (admin): export everything about a tenant, purge a tenant for good."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.tenant_admin import ExportQuery, PurgeBody
from service.views.base import encode
from service.views.compliance import PurgeResult, TenantExport

api = Api("gdpr")


@api.route(
    "GET", "/api/v1/tenants/{id}/export",
    summary="GDPR export: one JSON document (attachment) with everything about a tenant",
    query=ExportQuery, response=TenantExport,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def export_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, ExportQuery)
    document = await use_cases(request).tenant_export.export(
        principal_of(request),
        actor_of(request),
        tenant_id,
        include_secrets=query.include_secrets,
    )
    slug = document.tenant.slug  # ^[a-z][a-z0-9_]*$: safe in a header as it is
    return web.Response(
        body=encode(document),
        content_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="tenant-{slug}-export.json"',
            "Cache-Control": "no-store",
        },
    )


@api.route(
    "POST", "/api/v1/tenants/{id}/purge",
    summary="GDPR purge: hard-delete a tenant (cascade: its subtree); audit entries redacted",
    body=PurgeBody, response=PurgeResult,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "HAS_CHILDREN"),
)  # fmt: skip
async def purge_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    body = await read_body(request, PurgeBody)
    result = await use_cases(request).tenant_purge.purge(
        principal_of(request), actor_of(request), tenant_id, body
    )
    return json_response(PurgeResult(tenant_id=result.tenant_id, purged=True, counts=result.counts))
