"""Tenant endpoints, restore included (docs/api.md, Tenants)."""

from __future__ import annotations

from uuid import UUID

import msgspec
from aiohttp import web

from service.auth.principal import Principal
from service.http.appkeys import HEAVY_READS, use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.ratecost import charge_items
from service.http.requests import field_error, parse_query, path_uuid, read_body
from service.http.responses import (
    json_page_response,
    json_response,
    next_page,
    page_response,
    raw_json_response,
    rendered_response,
)
from service.http.routing import FRESH_GET, IF_MATCH, Api
from service.http.streaming import stream_json_array
from service.repositories.tenants import TenantRow
from service.schemas.history import HistoryPointQuery, moment_of
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
from service.usecases.tenants.creation import BatchRejected, ItemError, batch_error
from service.usecases.tenants.queries import TenantRowPage
from service.views.base import render
from service.views.errors import TenantBatchError
from service.views.tenants import Tenant, TenantBatchResult, TenantPage

api = Api("tenants")
TENANT_ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")


def _listed(page: TenantRowPage) -> list[Tenant]:
    """The page's tenants, each with child_count when the caller asked for counts."""
    counts = page.child_counts
    if counts is None:
        return [Tenant.of(t) for t in page.items]
    return [Tenant.of(t, child_count=counts[t.id]) for t in page.items]


def _tenant_response(
    request: web.Request,
    tenant: TenantRow,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """The tenant rendered once: the body and its ETag."""
    return rendered_response(request, render(Tenant.of(tenant)), status=status, headers=headers)


@api.route(
    "GET", "/api/v1/tenants", summary="List tenants (keyset pages)", query=ListTenantsQuery,
    response=TenantPage, errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
    extra={"headers": {200: ("Link",)}},
)  # fmt: skip
async def list_tenants(request: web.Request) -> web.Response:
    query = parse_query(request, ListTenantsQuery)
    page = await use_cases(request).tenant_queries.list_page(principal_of(request), query)
    return page_response(request, TenantPage, _listed(page), page)


@api.route(
    "POST", "/api/v1/tenants", summary="Create a tenant", body=TenantCreate, response=Tenant,
    status=201, extra={"headers": {201: ("ETag", "Location")}},
    errors=("VALIDATION_ERROR", "CONFLICT", "TENANT_NOT_FOUND", "TENANT_ARCHIVED",
            "TENANT_ACCESS_DENIED", "DEPTH_LIMIT_EXCEEDED", "CONFIG_LOCKED",
            "CONFIG_SCHEMA_VIOLATION", "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC"),
)  # fmt: skip
async def create_tenant(request: web.Request) -> web.Response:
    body = await read_body(request, TenantCreate)
    tenant = await use_cases(request).tenant_creation.create(
        principal_of(request), actor_of(request), body
    )
    return _tenant_response(
        request, tenant, status=201, headers={"Location": f"/api/v1/tenants/{tenant.id}"}
    )


@api.route(
    "POST", "/api/v1/tenants/batch", summary="Create up to 100 tenants atomically",
    body=TenantBatchCreate, response=TenantBatchResult, status=201,
    errors=("VALIDATION_ERROR", "CONFLICT", "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC"),
    extra={"responses": {400: TenantBatchError, 409: TenantBatchError}},
)  # fmt: skip
async def create_tenants_batch(request: web.Request) -> web.Response:
    batch = await read_body(request, TenantBatchCreate)
    # Each item is a create: it costs what a single request costs (slug probing).
    await charge_items(request, len(batch.tenants), "tenants")
    items: list[TenantCreate | ItemError] = []
    for index, raw in enumerate(batch.tenants):
        try:
            items.append(msgspec.json.decode(raw, type=TenantCreate))
        except msgspec.ValidationError as exc:
            error = field_error(exc)
            items.append(ItemError(index, "VALIDATION_ERROR", error.message, error.field))
    try:
        created = await use_cases(request).tenant_creation.create_many(
            principal_of(request), actor_of(request), items
        )
    except BatchRejected as rejected:
        raise batch_error(rejected.errors, len(items)) from None
    return json_response(
        TenantBatchResult(created=[Tenant.of(t) for t in created], errors=[]), status=201
    )


@api.route(
    "GET", "/api/v1/tenants/{id}", summary="Get a tenant (ETag; If-None-Match answers 304)",
    query=GetTenantQuery, response=Tenant, extra=FRESH_GET,
    errors=(*TENANT_ERRORS, "HISTORY_UNAVAILABLE"),
)  # fmt: skip
async def get_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, GetTenantQuery)
    named = moment_of(query.as_of, query.revision)
    if named is not None:
        moment, field = named
        rendered = await use_cases(request).context_history.tenant_at(
            principal_of(request),
            tenant_id,
            moment,
            field,
            include_archived=query.include_archived,
        )
    else:
        rendered = await use_cases(request).tenant_queries.rendered(
            principal_of(request), tenant_id, include_archived=query.include_archived
        )
    return rendered_response(request, rendered)


@api.route(
    "PATCH", "/api/v1/tenants/{id}", summary="Update name, slug, config or metadata (merge patch)",
    body=TenantPatch, response=Tenant, extra=IF_MATCH,
    errors=(*TENANT_ERRORS, "CONFLICT", "CONFIG_LOCKED", "PRECONDITION_FAILED",
            "CONFIG_SCHEMA_VIOLATION", "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC"),
)  # fmt: skip
async def update_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    patch = await read_body(request, TenantPatch)
    tenant = await use_cases(request).tenant_changes.update(
        principal_of(request),
        actor_of(request),
        tenant_id,
        patch,
        if_match=request.headers.get("If-Match"),
    )
    return _tenant_response(request, tenant)


@api.route(
    "DELETE", "/api/v1/tenants/{id}", summary="Archive a tenant (soft delete)", status=204,
    extra={"request_headers": ("If-Match",)},
    errors=(*TENANT_ERRORS, "HAS_CHILDREN", "PRECONDITION_FAILED"),
)  # fmt: skip
async def archive_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    await use_cases(request).tenant_changes.archive(
        principal_of(request),
        actor_of(request),
        tenant_id,
        if_match=request.headers.get("If-Match"),
    )
    return web.Response(status=204)


@api.route(
    "POST", "/api/v1/tenants/{id}/restore", summary="Restore an archived tenant",
    response=Tenant, errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND", "PARENT_ARCHIVED"),
    extra={"headers": {200: ("ETag",)}},
)  # fmt: skip
async def restore_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    tenant = await use_cases(request).tenant_changes.restore(
        principal_of(request), actor_of(request), tenant_id
    )
    return _tenant_response(request, tenant)


@api.route(
    "POST", "/api/v1/tenants/{id}/move", summary="Move a tenant and its subtree",
    body=TenantMove, response=Tenant, extra=IF_MATCH,
    errors=(*TENANT_ERRORS, "CYCLE_DETECTED", "DEPTH_LIMIT_EXCEEDED", "TENANT_ACCESS_DENIED",
            "PRECONDITION_FAILED", "ROLE_OUTSIDE_SUBTREE", "CONFIG_SCHEMA_CONFLICT",
            "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC"),
)  # fmt: skip
async def move_tenant(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    body = await read_body(request, TenantMove)
    tenant = await use_cases(request).tenant_moves.move(
        principal_of(request),
        actor_of(request),
        tenant_id,
        body.new_parent_id,
        if_match=request.headers.get("If-Match"),
    )
    return _tenant_response(request, tenant)


@api.route(
    "GET", "/api/v1/tenants/{id}/ancestors", summary="Ancestors, root first",
    query=HistoryPointQuery, response=list[Tenant], errors=(*TENANT_ERRORS, "HISTORY_UNAVAILABLE"),
)  # fmt: skip
async def list_ancestors(request: web.Request) -> web.Response:
    query = parse_query(request, HistoryPointQuery)
    named = moment_of(query.as_of, query.revision)
    if named is not None:
        moment, field = named
        then = await use_cases(request).context_history.ancestors_at(
            principal_of(request), path_uuid(request), moment, field
        )
        return json_response(then)
    found = await use_cases(request).tenant_queries.ancestors(
        principal_of(request), path_uuid(request)
    )
    return raw_json_response(found.text)


@api.route(
    "GET", "/api/v1/tenants/{id}/descendants",
    summary="Descendants in depth-first pre-order (streamed; pages with limit and cursor)",
    query=DescendantsQuery, response=list[Tenant], errors=TENANT_ERRORS,
    extra={"headers": {200: ("X-Next-Cursor", "Link")}},
)  # fmt: skip
async def list_descendants(request: web.Request) -> web.StreamResponse:
    tenant_id = path_uuid(request)
    query = parse_query(request, DescendantsQuery)
    principal = principal_of(request)
    queries = use_cases(request).tenant_queries
    if query.limit is not None:
        page = await queries.descendants_page(principal, tenant_id, query, query.limit)
        return json_page_response(request, page)
    # A whole subtree, streamed. Only a heavy list (more than heavy.threshold_rows
    # tenants) takes a slot: its first chunk, one row past the threshold, tells; or, when
    # no slot would be free at once, a count capped there (docs/decisions/tenants.md).
    heavy = request.app[HEAVY_READS]
    caller, first_rows = principal.actor_id, heavy.threshold_rows + 1
    if not heavy.free_for(caller) and await queries.descendants_over(
        principal, tenant_id, query, heavy.threshold_rows
    ):
        # No slot at once for a heavy list: refused (429) or waiting (503 after) without
        # rendering anything, and without holding a pooled connection while it waits.
        return await _whole_heavy_list(request, principal, tenant_id, query)
    async with queries.descendants(principal, tenant_id, query, first_rows=first_rows) as chunks:
        first = await anext(chunks, None)
        if first is None or len(first.ids) < first_rows:
            return await stream_json_array(request, chunks, first=first)
        async with heavy.slot(caller, wait=False) as held:
            if held:
                return await stream_json_array(request, chunks, first=first)
    # The last slot was taken meanwhile: give the connection back before waiting.
    return await _whole_heavy_list(request, principal, tenant_id, query)


async def _whole_heavy_list(
    request: web.Request, principal: Principal, tenant_id: UUID, query: DescendantsQuery
) -> web.StreamResponse:
    """A heavy list: a slot first (429 past the caller's share, 503 when none frees up
    within the wait), then the list read afresh."""
    heavy = request.app[HEAVY_READS]
    queries = use_cases(request).tenant_queries
    async with (
        heavy.slot(principal.actor_id),
        queries.descendants(
            principal, tenant_id, query, first_rows=heavy.threshold_rows + 1
        ) as chunks,
    ):
        return await stream_json_array(request, chunks)


@api.route(
    "GET", "/api/v1/tenants/{id}/children", summary="Direct children in id order",
    query=ChildrenQuery, response=list[Tenant], errors=TENANT_ERRORS,
    extra={"headers": {200: ("X-Next-Cursor", "Link")}},
)  # fmt: skip
async def list_children(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, ChildrenQuery)
    queries = use_cases(request).tenant_queries
    if query.include_child_counts:
        # child_count is added per tenant in Python; the plain list is rendered in SQL.
        page = await queries.children(principal_of(request), tenant_id, query)
        headers = next_page(request, page.next_cursor, cursor_header=True)
        return json_response(_listed(page), headers=headers)
    raw = await queries.children_json(principal_of(request), tenant_id, query)
    return json_page_response(request, raw)
