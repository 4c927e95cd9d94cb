"""Tenant endpoints of the spec plus restore (DESIGN.md section 3)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import msgspec
from aiohttp import web

from service.http.appkeys import TENANT_CHANGES, TENANT_CREATION, TENANT_MOVES, TENANT_QUERIES
from service.http.middleware import actor_of, principal_of
from service.http.requests import field_error, parse_query, path_uuid, read_body
from service.http.responses import json_response, raw_json_response
from service.http.routing import Api
from service.representations import opt_str, tenant_etag, tenant_json
from service.schemas.tenants import (
    ChildrenQuery,
    DescendantsQuery,
    GetTenantQuery,
    ListTenantsQuery,
    TenantBatchCreate,
    TenantCreate,
    TenantMove,
    TenantPatch,
)
from service.usecases.tenant_creation import BatchRejected, ItemError, batch_error
from service.usecases.tenant_queries import Page

api = Api("tenants")
TENANT_ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")


def _listed(page: Page) -> list[dict[str, Any]]:
    """The page's tenants, each with child_count when the caller asked for counts."""
    counts = page.child_counts
    if counts is None:
        return [tenant_json(t) for t in page.items]
    return [{**tenant_json(t), "child_count": counts[t.id]} for t in page.items]


def _page_body(page: Page) -> dict[str, Any]:
    return {
        "data": _listed(page),
        "next_cursor": opt_str(page.next_cursor),
        "has_more": page.has_more,
    }


def _next_cursor_header(cursor: UUID | None) -> dict[str, str]:
    return {} if cursor is None else {"X-Next-Cursor": str(cursor)}


@api.route(
    "GET", "/api/v1/tenants", summary="List tenants (keyset pages)", query=ListTenantsQuery,
    response="TenantPage", errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_tenants(request: web.Request) -> web.Response:
    query = parse_query(request, ListTenantsQuery)
    page = await request.app[TENANT_QUERIES].list_page(principal_of(request), query)
    return json_response(_page_body(page))


@api.route(
    "POST", "/api/v1/tenants", summary="Create a tenant", body=TenantCreate, response="Tenant",
    status=201,
    errors=("VALIDATION_ERROR", "CONFLICT", "TENANT_NOT_FOUND", "TENANT_ARCHIVED",
            "TENANT_ACCESS_DENIED", "DEPTH_LIMIT_EXCEEDED", "CONFIG_LOCKED"),
)  # fmt: skip
async def create_tenant(request: web.Request) -> web.Response:
    body = await read_body(request, TenantCreate)
    tenant = await request.app[TENANT_CREATION].create(
        principal_of(request), actor_of(request), body
    )
    return json_response(
        tenant_json(tenant),
        status=201,
        headers={"Location": f"/api/v1/tenants/{tenant.id}", "ETag": tenant_etag(tenant)},
    )


@api.route(
    "POST", "/api/v1/tenants/batch", summary="Create up to 100 tenants atomically",
    body=TenantBatchCreate, response="TenantBatchResult", status=201,
    errors=("VALIDATION_ERROR", "CONFLICT"),
    extra={"responses": {400: "TenantBatchError", 409: "TenantBatchError"}},
)  # fmt: skip
async def create_tenants_batch(request: web.Request) -> web.Response:
    batch = await read_body(request, TenantBatchCreate)
    items: list[TenantCreate | ItemError] = []
    for index, raw in enumerate(batch.tenants):
        try:
            items.append(msgspec.json.decode(raw, type=TenantCreate))
        except msgspec.ValidationError as exc:
            error = field_error(exc)
            items.append(ItemError(index, "VALIDATION_ERROR", error.message, error.field))
    try:
        created = await request.app[TENANT_CREATION].create_many(
            principal_of(request), actor_of(request), items
        )
    except BatchRejected as rejected:
        raise batch_error(rejected.errors, len(items)) from None
    return json_response({"created": [tenant_json(t) for t in created], "errors": []}, status=201)


@api.route(
    "GET", "/api/v1/tenants/{id}", summary="Get a tenant", query=GetTenantQuery,
    response="Tenant", errors=TENANT_ERRORS,
)  # fmt: skip
async def get_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, GetTenantQuery)
    rendered = await request.app[TENANT_QUERIES].rendered(
        principal_of(request), tenant_id, include_archived=query.include_archived
    )
    return web.Response(
        body=rendered.body, headers={"ETag": rendered.etag}, content_type="application/json"
    )


@api.route(
    "PATCH", "/api/v1/tenants/{id}", summary="Update name, slug, config or metadata (merge patch)",
    body=TenantPatch, response="Tenant",
    errors=(*TENANT_ERRORS, "CONFLICT", "CONFIG_LOCKED", "PRECONDITION_FAILED"),
)  # fmt: skip
async def update_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    patch = await read_body(request, TenantPatch)
    tenant = await request.app[TENANT_CHANGES].update(
        principal_of(request),
        actor_of(request),
        tenant_id,
        patch,
        if_match=request.headers.get("If-Match"),
    )
    return json_response(tenant_json(tenant), headers={"ETag": tenant_etag(tenant)})


@api.route(
    "DELETE", "/api/v1/tenants/{id}", summary="Archive a tenant (soft delete)", status=204,
    errors=(*TENANT_ERRORS, "HAS_CHILDREN", "PRECONDITION_FAILED"),
)  # fmt: skip
async def archive_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    await request.app[TENANT_CHANGES].archive(
        principal_of(request),
        actor_of(request),
        tenant_id,
        if_match=request.headers.get("If-Match"),
    )
    return web.Response(status=204)


@api.route(
    "POST", "/api/v1/tenants/{id}/restore", summary="Restore an archived tenant",
    response="Tenant", errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "PARENT_ARCHIVED"),
)  # fmt: skip
async def restore_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    tenant = await request.app[TENANT_CHANGES].restore(
        principal_of(request), actor_of(request), tenant_id
    )
    return json_response(tenant_json(tenant), headers={"ETag": tenant_etag(tenant)})


@api.route(
    "POST", "/api/v1/tenants/{id}/move", summary="Move a tenant and its subtree",
    body=TenantMove, response="Tenant",
    errors=(*TENANT_ERRORS, "CYCLE_DETECTED", "DEPTH_LIMIT_EXCEEDED", "TENANT_ACCESS_DENIED",
            "PRECONDITION_FAILED"),
)  # fmt: skip
async def move_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    body = await read_body(request, TenantMove)
    tenant = await request.app[TENANT_MOVES].move(
        principal_of(request),
        actor_of(request),
        tenant_id,
        body.new_parent_id,
        if_match=request.headers.get("If-Match"),
    )
    return json_response(tenant_json(tenant), headers={"ETag": tenant_etag(tenant)})


@api.route(
    "GET", "/api/v1/tenants/{id}/ancestors", summary="Ancestors, root first",
    response="TenantList", errors=TENANT_ERRORS,
)  # fmt: skip
async def list_ancestors(request: web.Request) -> web.Response:
    found = await request.app[TENANT_QUERIES].ancestors(principal_of(request), path_uuid(request))
    return raw_json_response(found.text)


@api.route(
    "GET", "/api/v1/tenants/{id}/descendants", summary="Descendants in depth-first pre-order",
    query=DescendantsQuery, response="TenantList", errors=TENANT_ERRORS,
)  # fmt: skip
async def list_descendants(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, DescendantsQuery)
    found = await request.app[TENANT_QUERIES].descendants(principal_of(request), tenant_id, query)
    return raw_json_response(found.text)


@api.route(
    "GET", "/api/v1/tenants/{id}/children", summary="Direct children in id order",
    query=ChildrenQuery, response="TenantList", errors=TENANT_ERRORS,
)  # fmt: skip
async def list_children(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, ChildrenQuery)
    queries = request.app[TENANT_QUERIES]
    if query.include_child_counts:
        # child_count is added per tenant in Python; the plain list is rendered in SQL.
        page = await queries.children(principal_of(request), tenant_id, query)
        return json_response(_listed(page), headers=_next_cursor_header(page.next_cursor))
    raw = await queries.children_json(principal_of(request), tenant_id, query)
    return raw_json_response(raw.body.text, headers=_next_cursor_header(raw.next_cursor))
