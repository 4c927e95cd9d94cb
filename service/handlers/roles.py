"""Role endpoints (docs/api.md, Authentication and scopes): named bundles of scopes."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.api_keys import ListRolesQuery, RoleCreate, RolePatch
from service.views.keys import Role

api = Api("roles")
ROLE_ERRORS = ("VALIDATION_ERROR", "ROLE_NOT_FOUND", "TENANT_ACCESS_DENIED")


@api.route(
    "POST", "/api/v1/roles", summary="Create a role", body=RoleCreate, response=Role,
    status=201, extra={"headers": {201: ("Location",)}},
    errors=("VALIDATION_ERROR", "CONFLICT", "INSUFFICIENT_SCOPE", "TENANT_ACCESS_DENIED",
            "TENANT_NOT_FOUND", "TENANT_ARCHIVED"),
)  # fmt: skip
async def create_role(request: web.Request) -> web.Response:
    body = await read_body(request, RoleCreate)
    role = await use_cases(request).role_management.create(
        principal_of(request), actor_of(request), body
    )
    return json_response(
        Role.of(role), status=201, headers={"Location": f"/api/v1/roles/{role.id}"}
    )


@api.route(
    "GET", "/api/v1/roles", summary="List roles", query=ListRolesQuery, response=list[Role],
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_roles(request: web.Request) -> web.Response:
    query = parse_query(request, ListRolesQuery)
    roles = await use_cases(request).role_management.list(principal_of(request), query)
    return json_response([Role.of(r) for r in roles])


@api.route(
    "GET", "/api/v1/roles/{id}", summary="Get a role", response=Role, errors=ROLE_ERRORS,
)  # fmt: skip
async def get_role(request: web.Request) -> web.Response:
    role = await use_cases(request).role_management.get(principal_of(request), path_uuid(request))
    return json_response(Role.of(role))


@api.route(
    "PATCH", "/api/v1/roles/{id}", summary="Change a role's name, description or scopes",
    body=RolePatch, response=Role, errors=(*ROLE_ERRORS, "CONFLICT", "INSUFFICIENT_SCOPE",
                                                 "EXCEEDS_CALLER_LIMITS"),
)  # fmt: skip
async def update_role(request: web.Request) -> web.Response:
    role_id = path_uuid(request)
    patch = await read_body(request, RolePatch)
    role = await use_cases(request).role_management.update(
        principal_of(request), actor_of(request), role_id, patch
    )
    return json_response(Role.of(role))


@api.route(
    "DELETE", "/api/v1/roles/{id}", summary="Delete a role (keys holding it fall back to "
    "their own scopes)", status=204,
    errors=(*ROLE_ERRORS, "INSUFFICIENT_SCOPE", "EXCEEDS_CALLER_LIMITS", "ROLE_OUTSIDE_SUBTREE"),
)  # fmt: skip
async def delete_role(request: web.Request) -> web.Response:
    await use_cases(request).role_management.delete(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return web.Response(status=204)
