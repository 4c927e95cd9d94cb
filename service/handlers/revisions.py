"""Reverting a revision (docs/history.md): puts back what it did as a new change."""

from __future__ import annotations

import msgspec
from aiohttp import web

from service.base.errors import FieldError, ServiceError
from service.http.appkeys import use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, read_optional_body
from service.http.responses import json_response
from service.http.routing import Api
from service.schemas.history import RevertBody, RevertQuery
from service.views.history import RevisionRevert

api = Api("history")


@api.route(
    "POST", "/api/v1/revisions/{revision}/revert",
    summary="Undo what a revision did to config entries and permission policies, as a new "
    "change (dry_run=true: the impact only; 409 when later revisions changed the same keys "
    "unless force)",
    body=RevertBody, query=RevertQuery, response=RevisionRevert, extra={"body_required": False},
    errors=(
        "VALIDATION_ERROR", "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "TENANT_ACCESS_DENIED",
        "HISTORY_UNAVAILABLE", "REVERT_CONFLICT", "REVERT_UNSUPPORTED",
    ),
)  # fmt: skip
async def revert_revision(request: web.Request) -> web.Response:
    text = request.match_info["revision"]
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        message = "must be a revision number"
        raise ServiceError(
            "VALIDATION_ERROR", f"revision: {message}", details=[FieldError("revision", message)]
        )
    query = parse_query(request, RevertQuery)
    body = await read_optional_body(request, RevertBody) or RevertBody()
    answer = await use_cases(request).revision_reverts.revert(
        principal_of(request),
        actor_of(request),
        int(text),
        force=body.force,
        dry_run=query.dry_run,
    )
    return json_response(msgspec.convert(answer, RevisionRevert))
