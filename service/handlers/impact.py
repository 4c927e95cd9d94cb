"""Impact previews (dry runs) of changes to a tenant's context (docs/decisions/context.md
"Impact previews"): the answer describes the change; nothing is written."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middleware import principal_of
from service.http.requests import parse_query, path_uuid, read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.config import (
    ConfigPreviewBody,
    PermissionPreviewBody,
    PreviewQuery,
    entry_key,
)
from service.schemas.tenants import TenantMove
from service.views.impact import ConfigChangePreview, MovePreview, PermissionChangePreview

api = Api("config")


@api.route(
    "POST", "/api/v1/tenants/{id}/config/{key}/preview",
    summary="Preview setting or deleting a config entry: the tenants whose resolved value "
    "would change (paged, X-Next-Cursor), the entries a lock would shadow, and whether the "
    "write would be refused; nothing is written",
    body=ConfigPreviewBody, query=PreviewQuery, response=ConfigChangePreview,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED"), writes=False,
)  # fmt: skip
async def preview_config_change(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    key = entry_key(request.match_info["key"])
    query = parse_query(request, PreviewQuery)
    body = await read_body(request, ConfigPreviewBody)
    document, next_cursor = await use_cases(request).config_impact.preview(
        principal_of(request), tenant_id, key, body, query
    )
    headers = {} if next_cursor is None else {"X-Next-Cursor": str(next_cursor)}
    return json_response(document, headers=headers)


@api.route(
    "POST", "/api/v1/tenants/{id}/permissions/{key}/preview",
    summary="Preview setting or deleting a permission policy: the tenants whose resolved "
    "policy would change (paged, X-Next-Cursor), the policies a LOCKED one would shadow, "
    "and whether the write would be refused; nothing is written",
    body=PermissionPreviewBody, query=PreviewQuery, response=PermissionChangePreview,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED"), writes=False,
)  # fmt: skip
async def preview_permission_change(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    key = entry_key(request.match_info["key"])
    query = parse_query(request, PreviewQuery)
    body = await read_body(request, PermissionPreviewBody)
    document, next_cursor = await use_cases(request).permission_impact.preview(
        principal_of(request), tenant_id, key, body, query
    )
    headers = {} if next_cursor is None else {"X-Next-Cursor": str(next_cursor)}
    return json_response(document, headers=headers)


@api.route(
    "POST", "/api/v1/tenants/{id}/move/preview",
    summary="Preview moving a tenant: the subtree's tenants whose resolved config or "
    "permissions would change (paged, X-Next-Cursor) and whether the move would be "
    "refused; nothing is written",
    body=TenantMove, query=PreviewQuery, response=MovePreview,
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "TENANT_ACCESS_DENIED"),
    writes=False,
)  # fmt: skip
async def preview_move(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, PreviewQuery)
    body = await read_body(request, TenantMove)
    document, next_cursor = await use_cases(request).move_preview.preview(
        principal_of(request), tenant_id, body.new_parent_id, query
    )
    headers = {} if next_cursor is None else {"X-Next-Cursor": str(next_cursor)}
    return json_response(document, headers=headers)
