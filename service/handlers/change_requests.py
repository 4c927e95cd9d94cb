"""Change requests (docs/change-requests.md): create with the impact preview, read,
list, submit, approve, reject, cancel, apply."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import SETTINGS, use_cases
from service.http.middlewares.exchange import actor_of, principal_of
from service.http.requests import parse_query, path_uuid, read_body, read_optional_body
from service.http.responses import json_response, page_response
from service.http.routing import Api
from service.schemas.change_requests import (
    ChangeRequestCreate,
    ListChangeRequestsQuery,
    ReviewBody,
)
from service.usecases.changes.requests import Shown
from service.views.changes import ChangeRequest, ChangeRequestPage, ImpactDriftError

api = Api("change-requests")
PATH = "/api/v1/change-requests"
# What a change can answer when its preview or apply runs it.
CHANGE_ERRORS = (
    "TENANT_NOT_FOUND", "TENANT_ARCHIVED", "CONFIG_NOT_FOUND", "PERMISSION_NOT_FOUND",
    "CONFIG_LOCKED", "PERMISSION_LOCKED", "CYCLE_DETECTED", "DEPTH_LIMIT_EXCEEDED",
    "HAS_CHILDREN", "PARENT_ARCHIVED", "CONFLICT", "TENANT_ACCESS_DENIED",
)  # fmt: skip
ONE_ERRORS = ("VALIDATION_ERROR", "CHANGE_REQUEST_NOT_FOUND")


def _view(request: web.Request, shown: Shown) -> ChangeRequest:
    needed = request.app[SETTINGS].change_request_approvals
    return ChangeRequest.of(shown.request, shown.reviews, needed)


@api.route(
    "POST", PATH,
    summary="Propose a list of changes: answers its impact (tenants whose context would "
    "change, key by key) and the digest of that affected set",
    body=ChangeRequestCreate, response=ChangeRequest, status=201,
    errors=("VALIDATION_ERROR", *CHANGE_ERRORS), extra={"headers": {201: ("Location",)}},
)  # fmt: skip
async def create_change_request(request: web.Request) -> web.Response:
    body = await read_body(request, ChangeRequestCreate)
    shown = await use_cases(request).change_requests.create(
        principal_of(request), actor_of(request), body
    )
    return json_response(
        _view(request, shown),
        status=201,
        headers={"Location": f"{PATH}/{shown.request.id}"},
    )


@api.route(
    "GET", PATH, summary="List change requests, newest first (keyset pages)",
    query=ListChangeRequestsQuery, response=ChangeRequestPage, errors=("VALIDATION_ERROR",),
    extra={"headers": {200: ("X-Next-Cursor", "Link")}},
)  # fmt: skip
async def list_change_requests(request: web.Request) -> web.Response:
    query = parse_query(request, ListChangeRequestsQuery)
    page = await use_cases(request).change_requests.list_page(principal_of(request), query)
    data = [_view(request, s) for s in page.items]
    return page_response(request, ChangeRequestPage, data, page, cursor_header=True)


@api.route(
    "GET", PATH + "/{id}", summary="A change request", response=ChangeRequest,
    errors=ONE_ERRORS,
)  # fmt: skip
async def get_change_request(request: web.Request) -> web.Response:
    shown = await use_cases(request).change_requests.get(principal_of(request), path_uuid(request))
    return json_response(_view(request, shown))


@api.route(
    "POST", PATH + "/{id}/submit", summary="Send a draft to review (its impact recomputed)",
    response=ChangeRequest,
    errors=(*ONE_ERRORS, "CHANGE_REQUEST_STATE", "INSUFFICIENT_SCOPE", *CHANGE_ERRORS),
)  # fmt: skip
async def submit_change_request(request: web.Request) -> web.Response:
    shown = await use_cases(request).change_requests.submit(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return json_response(_view(request, shown))


@api.route(
    "POST", PATH + "/{id}/approve",
    summary="Approve (not the author's own); with the approvals needed it is approved, and "
    "applies at once when its apply_at has passed",
    body=ReviewBody, response=ChangeRequest,
    errors=(*ONE_ERRORS, "CHANGE_REQUEST_STATE", "SELF_APPROVAL", "ALREADY_APPROVED"),
    extra={"body_required": False},
)  # fmt: skip
async def approve_change_request(request: web.Request) -> web.Response:
    body = await _review_body(request)
    shown = await use_cases(request).change_request_apply.approve(
        principal_of(request), actor_of(request), path_uuid(request), body.comment
    )
    return json_response(_view(request, shown))


@api.route(
    "POST", PATH + "/{id}/reject", summary="Reject (not the author's own)",
    body=ReviewBody, response=ChangeRequest,
    errors=(*ONE_ERRORS, "CHANGE_REQUEST_STATE", "SELF_APPROVAL", "ALREADY_APPROVED"),
    extra={"body_required": False},
)  # fmt: skip
async def reject_change_request(request: web.Request) -> web.Response:
    body = await _review_body(request)
    uc = use_cases(request).change_requests
    principal = principal_of(request)
    request_id = path_uuid(request)
    await uc.review(principal, actor_of(request), request_id, approve=False, comment=body.comment)
    return json_response(_view(request, await uc.get(principal, request_id)))


@api.route(
    "POST", PATH + "/{id}/cancel", summary="Cancel (the author, or an admin)",
    response=ChangeRequest,
    errors=(*ONE_ERRORS, "CHANGE_REQUEST_STATE", "INSUFFICIENT_SCOPE"),
)  # fmt: skip
async def cancel_change_request(request: web.Request) -> web.Response:
    shown = await use_cases(request).change_requests.cancel(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return json_response(_view(request, shown))


@api.route(
    "POST", PATH + "/{id}/apply",
    summary="Apply an approved request now: the whole list in one transaction (one "
    "revision), refused with IMPACT_DRIFT when the affected set changed since approval",
    response=ChangeRequest,
    errors=(*ONE_ERRORS, "CHANGE_REQUEST_STATE", "IMPACT_DRIFT", *CHANGE_ERRORS),
    extra={"responses": {409: ImpactDriftError}},
)  # fmt: skip
async def apply_change_request(request: web.Request) -> web.Response:
    shown = await use_cases(request).change_request_apply.apply(
        principal_of(request), actor_of(request), path_uuid(request)
    )
    return json_response(_view(request, shown))


async def _review_body(request: web.Request) -> ReviewBody:
    return await read_optional_body(request, ReviewBody) or ReviewBody()
