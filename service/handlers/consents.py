"""Consent endpoints: grant, history, revoke (docs/api.md, Audit log, consent, GDPR)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import field_error, parse_query, path_uuid, read_body, validation_failed
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.consents import (
    PURPOSE_PATTERN,
    ConsentGrant,
    ConsentListQuery,
    ConsentPath,
)
from service.views.compliance import Consent

api = Api("consent")
CONSENT_ERRORS = ("VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED")


@api.route(
    "POST", "/api/v1/tenants/{id}/consent",
    summary="Grant consent for a purpose (200 with the active record when one exists)",
    body=ConsentGrant, response=Consent, status=201, errors=CONSENT_ERRORS,
    extra={"responses": {200: Consent}},
)  # fmt: skip
async def grant_consent(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    body = await read_body(request, ConsentGrant)
    consent, created = await use_cases(request).consents.grant(
        principal_of(request), actor_of(request), tenant_id, body
    )
    return json_response(Consent.of(consent), status=201 if created else 200)


@api.route(
    "GET", "/api/v1/tenants/{id}/consent", summary="Consent records, newest first",
    query=ConsentListQuery, response=list[Consent], errors=CONSENT_ERRORS,
)  # fmt: skip
async def list_consents(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    query = parse_query(request, ConsentListQuery)
    records = await use_cases(request).consents.history(
        principal_of(request), tenant_id, purpose=query.purpose
    )
    return json_response([Consent.of(c) for c in records])


@api.route(
    "DELETE", "/api/v1/tenants/{id}/consent/{purpose}",
    summary="Revoke the active consent for a purpose (the record is kept as revoked)",
    status=204, errors=(*CONSENT_ERRORS, "CONSENT_NOT_FOUND"),
    extra={"path": {"purpose": {"type": "string", "pattern": PURPOSE_PATTERN, "maxLength": 64}}},
)  # fmt: skip
async def revoke_consent(request: web.Request) -> web.Response:
    tenant_id = path_uuid(request)
    try:
        path = msgspec.convert({"purpose": request.match_info["purpose"]}, ConsentPath)
    except msgspec.ValidationError as exc:
        raise validation_failed(field_error(exc)) from None
    await use_cases(request).consents.revoke(
        principal_of(request), actor_of(request), tenant_id, path.purpose
    )
    return web.Response(status=204)
