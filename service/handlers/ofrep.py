"""The OpenFeature Remote Evaluation Protocol (OFREP): tenant config read as feature
flags by any OpenFeature SDK through the official OFREP providers
(docs/context-delivery.md). Authentication and scopes are the service's own."""

from __future__ import annotations

import orjson
from aiohttp import web

from service.base.etags import etag_of_bytes, none_match
from service.http.appkeys import use_cases
from service.http.middlewares.exchange import principal_of
from service.http.routing import Api
from service.schemas.ofrep import OfrepEvaluationRequest
from service.views.ofrep import (
    OfrepBadRequest,
    OfrepBulkEvaluation,
    OfrepEvaluation,
    OfrepFlagNotFound,
)

api = Api("ofrep")
ERRORS = ("INSUFFICIENT_SCOPE",)


@api.route(
    "POST", "/ofrep/v1/evaluate/flags/{key}",
    summary="OFREP: one flag (a config key) for the tenant named by context.targetingKey",
    body=OfrepEvaluationRequest, response=OfrepEvaluation, writes=False, read_scope=True,
    extra={"responses": {400: OfrepBadRequest, 404: OfrepFlagNotFound}},
    errors=ERRORS,
)  # fmt: skip
async def evaluate_flag(request: web.Request) -> web.Response:
    outcome = await use_cases(request).flag_evaluation.evaluate(
        principal_of(request), request.match_info["key"], await request.read()
    )
    return web.Response(
        body=orjson.dumps(outcome.body), status=outcome.status, content_type="application/json"
    )


@api.route(
    "POST", "/ofrep/v1/evaluate/flags",
    summary="OFREP: every flag (resolved config key) of the tenant named by "
    "context.targetingKey (ETag; If-None-Match answers 304)",
    body=OfrepEvaluationRequest, response=OfrepBulkEvaluation, writes=False, read_scope=True,
    extra={"responses": {304: None, 400: OfrepBadRequest},
           "headers": {200: ("ETag",), 304: ("ETag",)}, "request_headers": ("If-None-Match",)},
    errors=ERRORS,
)  # fmt: skip
async def evaluate_flags(request: web.Request) -> web.Response:
    outcome = await use_cases(request).flag_evaluation.evaluate_all(
        principal_of(request), await request.read()
    )
    body = orjson.dumps(outcome.body)
    if outcome.status != 200:
        return web.Response(body=body, status=outcome.status, content_type="application/json")
    tag = etag_of_bytes(body)
    if none_match(request.headers.get("If-None-Match"), tag):
        return web.Response(status=304, headers={"ETag": tag})
    return web.Response(body=body, headers={"ETag": tag}, content_type="application/json")
