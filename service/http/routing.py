"""Endpoints declared with their contract (body, query, response, errors).

The same declarations register the aiohttp routes, drive authorization (public or
admin) and describe the API in the OpenAPI document, so the three cannot drift.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from service.auth.authorization import is_admin_path

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Where a POST's Idempotency-Key answer is stored: in the transaction of its change (the
# default), or after the work when it commits in several transactions by design.
IdempotencyMode = Literal["same_transaction", "after_work"]


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

    @property
    def admin(self) -> bool:
        return is_admin_path(self.path)


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


def register(app: web.Application, apis: Iterable[Api]) -> dict[tuple[str, str], Endpoint]:
    table: dict[tuple[str, str], Endpoint] = {}
    for api in apis:
        for endpoint in api.endpoints:
            key = (endpoint.method, endpoint.path)
            if key in table:
                raise ValueError(f"route {endpoint.method} {endpoint.path} declared twice")
            table[key] = endpoint
            app.router.add_route(endpoint.method, endpoint.path, endpoint.handler)
    return table


def endpoint_for(request: web.Request, table: dict[tuple[str, str], Endpoint]) -> Endpoint | None:
    resource = request.match_info.route.resource
    if resource is None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    return table.get((method, resource.canonical))
