"""Audit log endpoints (admin): list with filters and keyset cursor, verify and export the
hash chain, get one."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import principal_of
from service.http.requests import parse_query, path_uuid
from service.http.responses import json_response, next_page
from service.http.routing import Api
from service.schemas.audit import AuditChainExportQuery, AuditChainVerifyQuery, AuditLogQuery
from service.usecases.compliance.audit_chain import Verification
from service.views.audit_chain import (
    AuditChainLink,
    AuditChainVerification,
    ChainBreakShape,
    ChainHeadShape,
)
from service.views.compliance import AuditEntry

api = Api("audit")


def _verification(v: Verification) -> AuditChainVerification:
    found = v.first_break
    return AuditChainVerification(
        valid=found is None,
        from_seq=v.from_seq,
        to_seq=v.to_seq,
        checked=v.tally.checked,
        redacted=v.tally.redacted,
        purged=v.tally.purged,
        head=ChainHeadShape.of(v.head),
        first_break=None
        if found is None
        else ChainBreakShape(
            reason=found.reason, seq=found.seq, entry_id=found.entry_id, detail=found.detail
        ),
    )


@api.route(
    "GET", "/api/v1/audit-logs", summary="List audit entries, newest first (X-Next-Cursor)",
    query=AuditLogQuery, response=list[AuditEntry],
    extra={"headers": {200: ("X-Next-Cursor", "Link")}},
    errors=("VALIDATION_ERROR", "TENANT_NOT_FOUND"),
)  # fmt: skip
async def list_audit_logs(request: web.Request) -> web.Response:
    query = parse_query(request, AuditLogQuery)
    page = await use_cases(request).audit_queries.list_page(principal_of(request), query)
    headers = next_page(request, page.next_cursor, cursor_header=True)
    return json_response([AuditEntry.of(e) for e in page.items], headers=headers)


# Declared before /audit-logs/{id}, so "verify" and "chain" are not read as ids.
@api.route(
    "GET", "/api/v1/audit-logs/verify",
    summary="Check the audit hash chain over a range of links; reports the first break",
    query=AuditChainVerifyQuery, response=AuditChainVerification,
    errors=("VALIDATION_ERROR", "TENANT_ACCESS_DENIED"),
)  # fmt: skip
async def verify_audit_chain(request: web.Request) -> web.Response:
    query = parse_query(request, AuditChainVerifyQuery)
    result = await use_cases(request).audit_chain.verify(
        principal_of(request), query.from_seq, query.to_seq
    )
    return json_response(_verification(result))


@api.route(
    "GET", "/api/v1/audit-logs/chain",
    summary="Export the audit chain's links with their entries, oldest first (X-Next-Cursor)",
    query=AuditChainExportQuery, response=list[AuditChainLink],
    errors=("VALIDATION_ERROR", "TENANT_ACCESS_DENIED"),
)  # fmt: skip
async def export_audit_chain(request: web.Request) -> web.Response:
    query = parse_query(request, AuditChainExportQuery)
    links, next_seq = await use_cases(request).audit_chain.export(
        principal_of(request), query.from_seq, query.limit
    )
    headers = {} if next_seq is None else {"X-Next-Cursor": str(next_seq)}
    return json_response(
        [AuditChainLink.of(x.link, x.created_at_us) for x in links], headers=headers
    )


@api.route(
    "GET", "/api/v1/audit-logs/{id}", summary="Get one audit entry", response=AuditEntry,
    errors=("VALIDATION_ERROR", "AUDIT_LOG_NOT_FOUND"),
)  # fmt: skip
async def get_audit_log(request: web.Request) -> web.Response:
    entry = await use_cases(request).audit_queries.get(principal_of(request), path_uuid(request))
    return json_response(AuditEntry.of(entry))
