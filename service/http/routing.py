"""Endpoints declared with their contract (body, query, response, errors).

The same declarations register the aiohttp routes, drive authorization (public or
admin) and describe the API in the OpenAPI document, so the three cannot drift.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from aiohttp import hdrs, web

from service.auth.authorization import is_admin_path

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Where a POST's Idempotency-Key answer is stored: in the transaction of its change (the
# default), or after the work when it commits in several transactions by design.
IdempotencyMode = Literal["same_transaction", "after_work"]
# `extra` of a read answered with an ETag, and 304 for a current If-None-Match (the
# operation's description says so: service/http/openapi/document.py describe).
FRESH_GET: dict[str, Any] = {
    "headers": {200: ("ETag",)},
    "request_headers": ("If-None-Match",),
}
# `extra` of a change guarded by If-Match whose answer carries the new ETag.
IF_MATCH: dict[str, Any] = {"request_headers": ("If-Match",), "headers": {200: ("ETag",)}}


@dataclass(frozen=True, slots=True)
class Endpoint:
    method: str
    path: str
    handler: Handler
    summary: str
    body: Any = None
    query: Any = None
    response: Any = None
    status: int = 200
    errors: tuple[str, ...] = ()
    public: bool = False
    tag: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    idempotency: IdempotencyMode = "same_transaction"
    # False: a POST that only reads (an impact preview), so the read cache is kept.
    writes: bool = True
    # True: a POST that only reads (batch reads, OpenFeature evaluations), for which the
    # read scope suffices.
    read_scope: bool = False
    # Admin-only (docs/api.md), worked out once from the path rather than per request.
    admin: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "admin", is_admin_path(self.path))


class Api:
    """A group of endpoints (one module's worth), registered by the app factory."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.endpoints: list[Endpoint] = []

    def route(
        self, method: str, path: str, *, summary: str, **contract: Any
    ) -> Callable[[Handler], Handler]:
        def decorate(handler: Handler) -> Handler:
            self.endpoints.append(
                Endpoint(method, path, handler, summary, tag=self.tag, **contract)
            )
            return handler

        return decorate


# The template of the last route, which takes every path no other route matches.
NO_ROUTE = "/{tail:.*}"


class Wrapper(Protocol):
    """Puts a route's handler inside the pipeline (service/http/middlewares/pipeline.py)."""

    def wrap(self, handler: Handler, endpoint: Endpoint | None, route: str | None) -> Handler: ...

    def not_found(self) -> Handler: ...


def register(
    app: web.Application, apis: Iterable[Api], pipeline: Wrapper | None = None
) -> dict[tuple[str, str], Endpoint]:
    """Add every endpoint to the router, its handler wrapped by `pipeline`: one resource
    per path holding its methods, HEAD beside each GET (RFC 9110: GET's headers without
    the body), and a catch-all route that answers OPTIONS (204) and any other method
    (405) with the Allow header of that path alone. Without it aiohttp falls through to
    the next resource matching the path, so `/api-keys/dormant` would advertise, and
    PATCH would reach, `/api-keys/{id}`. Last, a route for every other path: 404.
    Without a pipeline (the OpenAPI document's tests) the handlers are registered bare."""
    wrap = pipeline.wrap if pipeline is not None else _bare
    table: dict[tuple[str, str], Endpoint] = {}
    paths: dict[str, list[Endpoint]] = {}
    for api in apis:
        for endpoint in api.endpoints:
            key = (endpoint.method, endpoint.path)
            if key in table:
                raise ValueError(f"route {endpoint.method} {endpoint.path} declared twice")
            table[key] = endpoint
            paths.setdefault(endpoint.path, []).append(endpoint)
    # aiohttp tries the resources under a path prefix one by one in registration order
    # (one regex match each): the reads clients make on every request go first. No two
    # templates match the same path (tests/test_http_methods.py), so order changes no answer.
    for path, endpoints in sorted(paths.items(), key=lambda item: _hot_rank(item[0])):
        resource = app.router.add_resource(path)
        for endpoint in endpoints:
            handler = wrap(endpoint.handler, endpoint, path)
            resource.add_route(endpoint.method, handler)
            if endpoint.method == "GET":
                resource.add_route("HEAD", handler)
        other = _other_methods(allowed_methods(endpoints))
        # OPTIONS is a read like GET (read scope; read and admin on admin routes),
        # credentialed wherever the path has a credentialed method; other methods the
        # path lacks answer 405 before any credential is looked at.
        resource.add_route(hdrs.METH_OPTIONS, wrap(other, options_endpoint(endpoints), path))
        resource.add_route(hdrs.METH_ANY, wrap(other, None, path))
    if pipeline is not None:
        app.router.add_route(hdrs.METH_ANY, NO_ROUTE, pipeline.not_found())
    return table


def options_endpoint(endpoints: list[Endpoint]) -> Endpoint:
    """The endpoint whose credentials OPTIONS on their path asks for: public only when
    every method of the path is, admin when any is; its method OPTIONS (read scope)."""
    chosen = min(endpoints, key=lambda e: (e.public, not e.admin))
    return replace(chosen, method=hdrs.METH_OPTIONS)


def _bare(handler: Handler, endpoint: Endpoint | None, route: str | None) -> Handler:
    return handler


# The hottest paths, hottest first: a SaaS back end asks for a tenant's context or the
# tenant itself on each of its own requests.
HOT_PATHS = (
    "/api/v1/tenants/{id}/context",
    "/api/v1/tenants/{id}",
    "/api/v1/tenants/{id}/ancestors",
    "/api/v1/tenants/{id}/children",
    "/api/v1/tenants/{id}/descendants",
    "/api/v1/tenants/{id}/config/{key}",
    "/api/v1/tenants/{id}/permissions/{key}",
)


def _hot_rank(path: str) -> int:
    return HOT_PATHS.index(path) if path in HOT_PATHS else len(HOT_PATHS)


def allowed_methods(endpoints: Iterable[Endpoint]) -> tuple[str, ...]:
    """The methods one path answers: its declared ones, HEAD with GET, and OPTIONS."""
    methods = {e.method for e in endpoints}
    if "GET" in methods:
        methods.add("HEAD")
    methods.add("OPTIONS")
    return tuple(sorted(methods))


def _other_methods(allowed: tuple[str, ...]) -> Handler:
    async def other_method(request: web.Request) -> web.StreamResponse:
        if request.method == hdrs.METH_OPTIONS:
            return web.Response(status=204, headers={hdrs.ALLOW: ", ".join(allowed)})
        raise web.HTTPMethodNotAllowed(request.method, allowed)

    return other_method


_ENDPOINT: web.RequestKey[Endpoint | None] = web.RequestKey("endpoint")


def endpoint_for(request: web.Request, table: dict[tuple[str, str], Endpoint]) -> Endpoint | None:
    """The declared endpoint the request matched (looked up once per request)."""
    try:
        return request[_ENDPOINT]
    except KeyError:
        pass
    resource = request.match_info.route.resource
    endpoint = None
    if resource is not None:
        method = "GET" if request.method == "HEAD" else request.method
        endpoint = table.get((method, resource.canonical))
    request[_ENDPOINT] = endpoint
    return endpoint
