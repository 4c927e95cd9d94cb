"""Value schemas and budgets of config keys (docs/constraints.md)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_entry, path_uuid, read_body
from service.http.responses import json_page_response, json_response, put_response
from service.http.routing import Api
from service.http.streaming import stream_json_array
from service.schemas.constraints import (
    ConfigBudgetPut,
    ConfigSchemaPut,
    ConfigSchemaQuery,
    ResolvedQuery,
    ViolationsQuery,
)
from service.views.constraints import (
    ConfigBudgetView,
    ConfigSchemaView,
    ResolvedKeyValue,
    SchemaViolation,
    SchemaViolationPage,
)

api = Api("config")
READ_ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")
SCHEMAS_PATH = "/api/v1/tenants/{id}/config-schemas"
BUDGETS_PATH = "/api/v1/tenants/{id}/config-budgets"


def _declared(view: Any, created: bool, path: str, tenant_id: UUID, key: str) -> web.Response:
    """201 with the Location of what a PUT declared; 200 when it replaced a declaration."""
    return put_response(view, created, f"{path.replace('{id}', str(tenant_id))}/{key}")


@api.route(
    "GET", SCHEMAS_PATH, summary="The value schemas a tenant declares itself",
    response=list[ConfigSchemaView], errors=READ_ERRORS,
)  # fmt: skip
async def list_schemas(request: web.Request) -> web.Response:
    rows = await use_cases(request).config_schemas.list_schemas(
        principal_of(request), path_uuid(request)
    )
    return json_response([ConfigSchemaView.of(r) for r in rows])


@api.route(
    "GET", SCHEMAS_PATH + "/{key}", summary="The value schema a tenant declares for a key",
    response=ConfigSchemaView, errors=(*READ_ERRORS, "CONFIG_SCHEMA_NOT_FOUND"),
)  # fmt: skip
async def get_schema(request: web.Request) -> web.Response:
    row = await use_cases(request).config_schemas.get(principal_of(request), *path_entry(request))
    return json_response(ConfigSchemaView.of(row))


@api.route(
    "PUT", SCHEMAS_PATH + "/{key}",
    summary="Declare (201) or replace (200) the JSON Schema (draft 2020-12) of a key's values "
    "at the tenant and below (config_schema.declared); ?enforce=false: audit-only",
    body=ConfigSchemaPut, query=ConfigSchemaQuery, response=ConfigSchemaView, status=201,
    extra={"responses": {200: ConfigSchemaView}, "headers": {201: ("Location",)}},
    errors=(*READ_ERRORS, "CONFIG_SCHEMA_CONFLICT"),
)  # fmt: skip
async def put_schema(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    query = parse_query(request, ConfigSchemaQuery)
    body = await read_body(request, ConfigSchemaPut)
    row, created = await use_cases(request).config_schemas.put(
        principal_of(request), actor_of(request), tenant_id, key, body.schema, enforce=query.enforce
    )
    return _declared(ConfigSchemaView.of(row), created, SCHEMAS_PATH, tenant_id, key)


@api.route(
    "DELETE", SCHEMAS_PATH + "/{key}",
    summary="Remove a key's value schema (config_schema.deleted)",
    status=204, errors=(*READ_ERRORS, "CONFIG_SCHEMA_NOT_FOUND"),
)  # fmt: skip
async def delete_schema(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    await use_cases(request).config_schemas.delete(
        principal_of(request), actor_of(request), tenant_id, key
    )
    return web.Response(status=204)


@api.route(
    "GET", SCHEMAS_PATH + "/{key}/violations",
    summary="The entries at the tenant and below that its schema of the key refuses, judged "
    "now (the report of an audit-only schema), in tenant id order, paged",
    query=ViolationsQuery, response=SchemaViolationPage,
    errors=(*READ_ERRORS, "CONFIG_SCHEMA_NOT_FOUND"),
)  # fmt: skip
async def schema_violations(request: web.Request) -> web.Response:
    query = parse_query(request, ViolationsQuery)
    schema, found, rest = await use_cases(request).config_schemas.violations(
        principal_of(request),
        *path_entry(request),
        cursor=query.cursor,
        limit=query.limit,
    )
    page = SchemaViolationPage(
        schema=ConfigSchemaView.of(schema),
        data=[
            SchemaViolation(
                tenant_id=b.tenant_id, key=b.key, schema_path=b.schema_path, message=b.message
            )
            for b in found
        ],
        next_cursor=rest,
        has_more=rest is not None,
    )
    return json_response(page)


@api.route(
    "GET", BUDGETS_PATH, summary="The budgets a tenant declares, with what is left of each",
    response=list[ConfigBudgetView], errors=READ_ERRORS,
)  # fmt: skip
async def list_budgets(request: web.Request) -> web.Response:
    rows = await use_cases(request).config_budgets.list_budgets(
        principal_of(request), path_uuid(request)
    )
    return json_response([ConfigBudgetView.of(b, u) for b, u in rows])


@api.route(
    "GET", BUDGETS_PATH + "/{key}", summary="A tenant's budget of a key, with what is left",
    response=ConfigBudgetView, errors=(*READ_ERRORS, "CONFIG_BUDGET_NOT_FOUND"),
)  # fmt: skip
async def get_budget(request: web.Request) -> web.Response:
    budget, use = await use_cases(request).config_budgets.get(
        principal_of(request), *path_entry(request)
    )
    return json_response(ConfigBudgetView.of(budget, use))


@api.route(
    "PUT", BUDGETS_PATH + "/{key}",
    summary="Declare a key a budget (201; 200 when it was one): the children's own values "
    "sum to at most the tenant's resolved value (config_budget.declared)",
    body=ConfigBudgetPut, response=ConfigBudgetView, status=201,
    extra={"responses": {200: ConfigBudgetView}, "headers": {201: ("Location",)}},
    errors=(*READ_ERRORS, "BUDGET_EXCEEDED", "BUDGET_NOT_NUMERIC"),
)  # fmt: skip
async def put_budget(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    await read_body(request, ConfigBudgetPut)
    budget, use, created = await use_cases(request).config_budgets.put(
        principal_of(request), actor_of(request), tenant_id, key
    )
    return _declared(ConfigBudgetView.of(budget, use), created, BUDGETS_PATH, tenant_id, key)


@api.route(
    "DELETE", BUDGETS_PATH + "/{key}", summary="Remove a key's budget (config_budget.deleted)",
    status=204, errors=(*READ_ERRORS, "CONFIG_BUDGET_NOT_FOUND"),
)  # fmt: skip
async def delete_budget(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    await use_cases(request).config_budgets.delete(
        principal_of(request), actor_of(request), tenant_id, key
    )
    return web.Response(status=204)


@api.route(
    "GET", "/api/v1/tenants/{id}/resolved",
    summary="Who resolves to what: the tenants of the subtree (itself included, pre-order) "
    "where the key resolves to a value, with its source and lock, masked as GET /context "
    "masks; filters value (JSON text), source_tenant_id, inherited, locked; streamed, or "
    "paged with limit and cursor",
    query=ResolvedQuery, response=list[ResolvedKeyValue], errors=READ_ERRORS,
    extra={"headers": {200: ("X-Next-Cursor", "Link")}},
)  # fmt: skip
async def list_resolved(request: web.Request) -> web.StreamResponse:
    tenant_id = path_uuid(request)
    query = parse_query(request, ResolvedQuery)
    principal = principal_of(request)
    resolved = use_cases(request).resolved_values
    if query.limit is not None:
        page = await resolved.page(principal, tenant_id, query, query.limit)
        return json_page_response(request, page)
    async with resolved.rows(principal, tenant_id, query, first_rows=500) as chunks:
        return await stream_json_array(request, chunks)
