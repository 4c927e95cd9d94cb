"""Role endpoints (DESIGN.md section 5): named bundles of scopes."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import ROLE_MANAGEMENT
from service.http.middleware import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.representations import role_json
from service.schemas.api_keys import ListRolesQuery, RoleCreate, RolePatch

api = Api("roles")
ROLE_ERRORS = ("VALIDATION_ERROR", "ROLE_NOT_FOUND", "TENANT_ACCESS_DENIED")


@api.route(
    "POST", "/api/v1/roles", summary="Create a role", body=RoleCreate, response="Role",
    status=201,
    errors=("VALIDATION_ERROR", "CONFLICT", "INSUFFICIENT_SCOPE", "TENANT_ACCESS_DENIED",
            "TENANT_NOT_FOUND", "TENANT_ARCHIVED"),
)  # fmt: skip
async def create_role(request: web.Request) -> web.Response:
    body = await read_body(request, RoleCreate)
    role = await request.app[ROLE_MANAGEMENT].create(principal_of(request), actor_of(request), body)
    return json_response(
        role_json(role), status=201, headers={"Location": f"/api/v1/roles/{role.id}"}
    )


@api.route(
    "GET", "/api/v1/roles", summary="List roles", query=ListRolesQuery, response="RoleList",
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_roles(request: web.Request) -> web.Response:
    query = parse_query(request, ListRolesQuery)
    roles = await request.app[ROLE_MANAGEMENT].list(principal_of(request), query)
    return json_response([role_json(r) for r in roles])


@api.route(
    "GET", "/api/v1/roles/{id}", summary="Get a role", response="Role", errors=ROLE_ERRORS,
)  # fmt: skip
async def get_role(request: web.Request) -> web.Response:
    role = await request.app[ROLE_MANAGEMENT].get(principal_of(request), path_uuid(request))
    return json_response(role_json(role))


@api.route(
    "PATCH", "/api/v1/roles/{id}", summary="Change a role's name, description or scopes",
    body=RolePatch, response="Role", errors=(*ROLE_ERRORS, "CONFLICT", "INSUFFICIENT_SCOPE"),
)  # fmt: skip
async def update_role(request: web.Request) -> web.Response:
    role_id = path_uuid(request)
    patch = await read_body(request, RolePatch)
    role = await request.app[ROLE_MANAGEMENT].update(
        principal_of(request), actor_of(request), role_id, patch
    )
    return json_response(role_json(role))


@api.route(
    "DELETE", "/api/v1/roles/{id}", summary="Delete a role (keys holding it fall back to "
    "their own scopes)", status=204, errors=(*ROLE_ERRORS, "INSUFFICIENT_SCOPE"),
)  # fmt: skip
async def delete_role(request: web.Request) -> web.Response:
    await request.app[ROLE_MANAGEMENT].delete(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return web.Response(status=204)
