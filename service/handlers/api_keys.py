"""API-key endpoints (docs/api.md, Authentication and scopes). The plaintext key appears only in the
answers to create and rotate."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body, read_optional_body
from service.http.responses import json_response, page_response
from service.http.routing import Api
from service.schemas.api_keys import (
    ApiKeyCreate,
    ApiKeyPatch,
    ApiKeyRotate,
    DormantQuery,
    ListApiKeysQuery,
    RoleAssignment,
)
from service.usecases.keys.commands import CreatedKey
from service.views.keys import ApiKey, ApiKeyPage, ApiKeyWithPlaintext, EffectiveScopes

api = Api("api-keys")
KEY_ERRORS = ("VALIDATION_ERROR", "API_KEY_NOT_FOUND", "TENANT_ACCESS_DENIED")


def _created(created: CreatedKey) -> web.Response:
    key_id = created.stored.key.id
    return json_response(
        ApiKeyWithPlaintext.issued(
            created.stored.key, created.plaintext, role_scopes=created.stored.role_scopes
        ),
        status=201,
        # The only answers carrying a key's text: never cached by anything on the way.
        headers={"Location": f"/api/v1/api-keys/{key_id}", "Cache-Control": "no-store"},
    )


@api.route(
    "POST", "/api/v1/api-keys", summary="Create an API key (its text is shown once)",
    body=ApiKeyCreate, response=ApiKeyWithPlaintext, status=201,
    extra={"headers": {201: ("Location",)}},
    errors=("VALIDATION_ERROR", "INSUFFICIENT_SCOPE", "TENANT_ACCESS_DENIED",
            "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "ROLE_NOT_FOUND", "EXCEEDS_CALLER_LIMITS"),
)  # fmt: skip
async def create_api_key(request: web.Request) -> web.Response:
    body = await read_body(request, ApiKeyCreate)
    created = await use_cases(request).api_key_commands.create(
        principal_of(request), actor_of(request), body
    )
    return _created(created)


@api.route(
    "GET", "/api/v1/api-keys", summary="List API keys (keyset pages)", query=ListApiKeysQuery,
    response=ApiKeyPage, errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
    extra={"headers": {200: ("Link",)}},
)  # fmt: skip
async def list_api_keys(request: web.Request) -> web.Response:
    query = parse_query(request, ListApiKeysQuery)
    page = await use_cases(request).api_key_queries.list_page(principal_of(request), query)
    return page_response(request, ApiKeyPage, [ApiKey.of(k) for k in page.items], page)


# Declared before /api/v1/api-keys/{id}: routes match in order.
@api.route(
    "GET", "/api/v1/api-keys/dormant", summary="Usable keys unused for more than `days` days",
    query=DormantQuery, response=list[ApiKey], errors=("VALIDATION_ERROR",),
)  # fmt: skip
async def list_dormant_api_keys(request: web.Request) -> web.Response:
    query = parse_query(request, DormantQuery)
    keys = await use_cases(request).api_key_queries.dormant(principal_of(request), query.days)
    return json_response([ApiKey.of(k) for k in keys])


@api.route(
    "GET", "/api/v1/api-keys/{id}", summary="Get an API key", response=ApiKey,
    errors=KEY_ERRORS,
)  # fmt: skip
async def get_api_key(request: web.Request) -> web.Response:
    stored = await use_cases(request).api_key_queries.get(principal_of(request), path_uuid(request))
    return json_response(ApiKey.of(stored))


@api.route(
    "PATCH", "/api/v1/api-keys/{id}", summary="Change a key's name, scopes, limits or expiry",
    body=ApiKeyPatch, response=ApiKey,
    errors=(*KEY_ERRORS, "INSUFFICIENT_SCOPE", "API_KEY_REVOKED",
            "EXCEEDS_CALLER_LIMITS"),
)  # fmt: skip
async def update_api_key(request: web.Request) -> web.Response:
    key_id = path_uuid(request)
    patch = await read_body(request, ApiKeyPatch)
    stored = await use_cases(request).api_key_commands.update(
        principal_of(request), actor_of(request), key_id, patch
    )
    return json_response(ApiKey.of(stored))


@api.route(
    "DELETE", "/api/v1/api-keys/{id}", summary="Revoke an API key (idempotent)", status=204,
    errors=KEY_ERRORS,
)  # fmt: skip
async def revoke_api_key(request: web.Request) -> web.Response:
    key_id = path_uuid(request)
    await use_cases(request).api_key_commands.revoke(
        principal_of(request), actor_of(request), key_id
    )
    return web.Response(status=204)


@api.route(
    "POST", "/api/v1/api-keys/{id}/rotate",
    summary="Replace a key with a new one of the same settings (old one revoked now or "
            "after grace_period_seconds)",
    body=ApiKeyRotate, response=ApiKeyWithPlaintext, status=201,
    extra={"body_required": False, "headers": {201: ("Location",)}},
    errors=(*KEY_ERRORS, "INSUFFICIENT_SCOPE", "API_KEY_REVOKED",
            "EXCEEDS_CALLER_LIMITS"),
)  # fmt: skip
async def rotate_api_key(request: web.Request) -> web.Response:
    key_id = path_uuid(request)
    body = await read_optional_body(request, ApiKeyRotate) or ApiKeyRotate()
    created = await use_cases(request).api_key_commands.rotate(
        principal_of(request), actor_of(request), key_id, body.grace_period_seconds
    )
    return _created(created)


@api.route(
    "PUT", "/api/v1/api-keys/{id}/role", summary="Assign a role (its scopes replace the key's)",
    body=RoleAssignment, response=ApiKey,
    errors=(*KEY_ERRORS, "ROLE_NOT_FOUND", "INSUFFICIENT_SCOPE", "API_KEY_REVOKED",
            "EXCEEDS_CALLER_LIMITS"),
)  # fmt: skip
async def assign_role(request: web.Request) -> web.Response:
    key_id = path_uuid(request)
    body = await read_body(request, RoleAssignment)
    stored = await use_cases(request).api_key_commands.assign_role(
        principal_of(request), actor_of(request), key_id, body.role_id
    )
    return json_response(ApiKey.of(stored))


@api.route(
    "DELETE", "/api/v1/api-keys/{id}/role", summary="Remove the key's role (back to its own "
    "scopes)", response=ApiKey,
    errors=(*KEY_ERRORS, "INSUFFICIENT_SCOPE", "API_KEY_REVOKED",
            "EXCEEDS_CALLER_LIMITS"),
)  # fmt: skip
async def remove_role(request: web.Request) -> web.Response:
    key_id = path_uuid(request)
    stored = await use_cases(request).api_key_commands.remove_role(
        principal_of(request), actor_of(request), key_id
    )
    return json_response(ApiKey.of(stored))


@api.route(
    "GET", "/api/v1/api-keys/{id}/scopes", summary="The key's effective scopes and their source",
    response=EffectiveScopes, errors=KEY_ERRORS,
)  # fmt: skip
async def effective_scopes(request: web.Request) -> web.Response:
    result = await use_cases(request).api_key_queries.effective_scopes(
        principal_of(request), path_uuid(request)
    )
    return json_response(result)
