"""Maintenance (admin): purge what the retention settings allow."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import read_optional_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.tenant_admin import PurgeExpiredBody
from service.views.compliance import PurgeExpiredResult

api = Api("maintenance")


@api.route(
    "POST", "/api/v1/maintenance/purge-expired",
    summary="Remove expired audit entries, deliveries, events, consents and archived tenants",
    body=PurgeExpiredBody, response=PurgeExpiredResult, extra={"body_required": False},
    errors=("VALIDATION_ERROR", "TENANT_ACCESS_DENIED"),
    # Its batches commit one by one: an Idempotency-Key answer is stored after the run.
    idempotency="after_work",
)  # fmt: skip
async def purge_expired(request: web.Request) -> web.Response:
    body = await read_optional_body(request, PurgeExpiredBody) or PurgeExpiredBody()
    counts = await use_cases(request).retention.purge_expired(
        principal_of(request), actor_of(request), dry_run=body.dry_run
    )
    return json_response(counts)
