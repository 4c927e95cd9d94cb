"""Audit log endpoints (admin): list with filters and keyset cursor, get one."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import AUDIT_QUERIES
from service.http.middleware import principal_of
from service.http.requests import parse_query, path_uuid
from service.http.responses import json_response
from service.http.routing import Api
from service.representations_gdpr import audit_entry_json
from service.schemas.audit import AuditLogQuery

api = Api("audit")


@api.route(
    "GET", "/api/v1/audit-logs", summary="List audit entries, newest first (X-Next-Cursor)",
    query=AuditLogQuery, response="AuditEntryList",
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_audit_logs(request: web.Request) -> web.Response:
    query = parse_query(request, AuditLogQuery)
    page = await request.app[AUDIT_QUERIES].list_page(principal_of(request), query)
    headers = {} if page.next_cursor is None else {"X-Next-Cursor": str(page.next_cursor)}
    return json_response([audit_entry_json(e) for e in page.items], headers=headers)


@api.route(
    "GET", "/api/v1/audit-logs/{id}", summary="Get one audit entry", response="AuditEntry",
    errors=("VALIDATION_ERROR", "AUDIT_LOG_NOT_FOUND"),
)  # fmt: skip
async def get_audit_log(request: web.Request) -> web.Response:
    entry = await request.app[AUDIT_QUERIES].get(principal_of(request), path_uuid(request))
    return json_response(audit_entry_json(entry))
