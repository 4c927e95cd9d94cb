"""Config entries and permission policies of a tenant (docs/api.md, inheritance)."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_entry, path_uuid, read_body
from service.http.responses import json_response, put_response
from service.http.routing import Api
from service.schemas.config import ConfigPut, PermissionPut, RevealQuery
from service.views.entries import ConfigEntry, PermissionPolicy

api = Api("config")
READ_ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")
REVEAL_ERRORS = (*READ_ERRORS, "INSUFFICIENT_SCOPE")
CONFIG_PATH = "/api/v1/tenants/{id}/config"
PERMISSIONS_PATH = "/api/v1/tenants/{id}/permissions"


def _no_store(reveal: bool) -> dict[str, str]:
    # Revealed secrets must not linger in shared or browser caches.
    return {"Cache-Control": "no-store"} if reveal else {}


@api.route(
    "GET", CONFIG_PATH, summary="A tenant's own config entries", query=RevealQuery,
    response=list[ConfigEntry], errors=REVEAL_ERRORS,
)  # fmt: skip
async def list_config(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, RevealQuery)
    entries = await use_cases(request).config_entries.list_entries(
        principal_of(request), tenant_id, reveal=query.reveal
    )
    return json_response(
        [ConfigEntry.of(e.entry, e.value) for e in entries], headers=_no_store(query.reveal)
    )


@api.route(
    "GET", CONFIG_PATH + "/{key}", summary="One config entry", query=RevealQuery,
    response=ConfigEntry, errors=(*REVEAL_ERRORS, "CONFIG_NOT_FOUND"),
)  # fmt: skip
async def get_config(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    query = parse_query(request, RevealQuery)
    shown = await use_cases(request).config_entries.get(
        principal_of(request), tenant_id, key, reveal=query.reveal
    )
    return json_response(ConfigEntry.of(shown.entry, shown.value), headers=_no_store(query.reveal))


@api.route(
    "PUT", CONFIG_PATH + "/{key}", summary="Create (201) or replace (200) a config entry",
    body=ConfigPut, response=ConfigEntry, status=201,
    extra={"responses": {200: ConfigEntry}, "headers": {201: ("Location",)}},
    errors=(*READ_ERRORS, "CONFIG_LOCKED", "CONFIG_SCHEMA_VIOLATION", "BUDGET_EXCEEDED",
            "BUDGET_NOT_NUMERIC"),
)  # fmt: skip
async def put_config(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    body = await read_body(request, ConfigPut)
    shown, created = await use_cases(request).config_entries.put(
        principal_of(request), actor_of(request), tenant_id, key, body
    )
    location = f"/api/v1/tenants/{tenant_id}/config/{key}"
    return put_response(ConfigEntry.of(shown.entry, shown.value), created, location)


@api.route(
    "DELETE", CONFIG_PATH + "/{key}", summary="Delete a config entry", status=204,
    errors=(*READ_ERRORS, "CONFIG_NOT_FOUND", "CONFIG_LOCKED", "BUDGET_EXCEEDED"),
)  # fmt: skip
async def delete_config(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    await use_cases(request).config_entries.delete(
        principal_of(request), actor_of(request), tenant_id, key
    )
    return web.Response(status=204)


@api.route(
    "GET", PERMISSIONS_PATH, summary="A tenant's own permission policies",
    response=list[PermissionPolicy], errors=READ_ERRORS,
)  # fmt: skip
async def list_permissions(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    policies = await use_cases(request).permission_policies.list_policies(
        principal_of(request), tenant_id
    )
    return json_response([PermissionPolicy.of(p) for p in policies])


@api.route(
    "GET", PERMISSIONS_PATH + "/{key}", summary="One permission policy",
    response=PermissionPolicy, errors=(*READ_ERRORS, "PERMISSION_NOT_FOUND"),
)  # fmt: skip
async def get_permission(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    policy = await use_cases(request).permission_policies.get(principal_of(request), tenant_id, key)
    return json_response(PermissionPolicy.of(policy))


@api.route(
    "PUT", PERMISSIONS_PATH + "/{key}",
    summary="Create (201, permission.created) or replace (200, permission.updated) a policy",
    body=PermissionPut, response=PermissionPolicy, status=201,
    extra={"responses": {200: PermissionPolicy}, "headers": {201: ("Location",)}},
    errors=(*READ_ERRORS, "PERMISSION_LOCKED"),
)  # fmt: skip
async def put_permission(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    body = await read_body(request, PermissionPut)
    policy, created = await use_cases(request).permission_policies.put(
        principal_of(request), actor_of(request), tenant_id, key, body
    )
    location = f"/api/v1/tenants/{tenant_id}/permissions/{key}"
    return put_response(PermissionPolicy.of(policy), created, location)


@api.route(
    "DELETE", PERMISSIONS_PATH + "/{key}", summary="Delete a permission policy", status=204,
    errors=(*READ_ERRORS, "PERMISSION_NOT_FOUND", "PERMISSION_LOCKED"),
)  # fmt: skip
async def delete_permission(request: web.Request) -> web.Response:
    tenant_id, key = path_entry(request)
    await use_cases(request).permission_policies.delete(
        principal_of(request), actor_of(request), tenant_id, key
    )
    return web.Response(status=204)
