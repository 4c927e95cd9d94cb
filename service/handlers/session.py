"""GET /api/v1/me: the credential the request was made with (docs/api.md)."""

from __future__ import annotations

from aiohttp import web

from service.http.appkeys import use_cases
from service.http.middlewares.exchange import principal_of
from service.http.responses import json_response
from service.http.routing import Api
from service.views.session import SignedIn

api = Api("session")


@api.route(
    "GET", "/api/v1/me",
    summary="The calling credential: kind, name, key prefix, effective scopes, subtree",
    response=SignedIn,
)  # fmt: skip
async def me(request: web.Request) -> web.Response:
    described = await use_cases(request).signed_in.describe(principal_of(request))
    return json_response(described)
