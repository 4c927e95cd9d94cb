"""What the pipeline (service/http/middlewares/pipeline.py) learns of a request, for handlers: its
id, its caller, its address and its rate limit, in one `Exchange` under one request key
(every access to a request's own mapping is a Python call, and a cached read made about
a dozen of them); and the answers to errors no handler turned into a ServiceError."""

from __future__ import annotations

from aiohttp import web

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError
from service.db.errors import translate_db_error
from service.http.responses import error_response
from service.observability.logs import get_logger
from service.ratelimit.buckets import Decision

log = get_logger("service.http")


class Exchange:
    """One request as the pipeline sees it: its id, and once authenticated its caller,
    its address for limits and audit entries, and where its rate-limit bucket stands."""

    __slots__ = ("client_address", "principal", "rate_limit", "request_id")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.principal: Principal | None = None
        self.client_address: str | None = None
        self.rate_limit: Decision | None = None


EXCHANGE = web.RequestKey("exchange", Exchange)
ROUTE_CODES = {
    400: "VALIDATION_ERROR",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def exchange_of(request: web.Request) -> Exchange:
    return request[EXCHANGE]


def principal_of(request: web.Request) -> Principal:
    """The authenticated caller (handlers of credentialed routes only)."""
    principal = request[EXCHANGE].principal
    if principal is None:
        raise LookupError("no authenticated caller: a public route asked for one")
    return principal


def actor_of(request: web.Request) -> Actor:
    exchange = request[EXCHANGE]
    principal = principal_of(request)
    return Actor(
        actor_id=principal.actor_id,
        actor_type=principal.actor_type,
        request_id=exchange.request_id,
        ip_address=exchange.client_address or request.remote,
    )


def http_error(exc: web.HTTPException, request: web.Request) -> ServiceError:
    code = ROUTE_CODES.get(
        exc.status, "INTERNAL_ERROR" if exc.status >= 500 else "VALIDATION_ERROR"
    )
    if exc.status == 404:
        return ServiceError("NOT_FOUND", f"no route for {request.path}")
    if exc.status == 405:
        # The path's own methods (service/http/routing.py registers HEAD and OPTIONS).
        allowed = set(getattr(exc, "allowed_methods", ()) or ())
        return ServiceError(
            "METHOD_NOT_ALLOWED",
            f"{request.method} is not allowed here",
            headers={"Allow": ", ".join(sorted(allowed))},
        )
    if exc.status == 413:
        return ServiceError("PAYLOAD_TOO_LARGE", "the request body is too large")
    return ServiceError(code, exc.reason or "bad request")


def answer_headers(request: web.Request) -> dict[str, str]:
    """The headers every answer carries: the request id and, for a limited request,
    where its bucket stands."""
    exchange = request[EXCHANGE]
    headers = {"X-Request-ID": exchange.request_id}
    decision = exchange.rate_limit
    if decision is not None:
        headers.update(decision.headers())
    return headers


def answer_for(exc: Exception, request: web.Request, request_id: str) -> web.Response:
    translated = translate_db_error(exc)
    if translated is None:
        resource = request.match_info.route.resource
        log.exception(
            "unhandled error",
            request_id=request_id,
            route=resource.canonical if resource is not None else None,
        )
        translated = ServiceError("INTERNAL_ERROR", "internal error; it has been logged")
    elif translated.code == "SERVICE_UNAVAILABLE":
        log.warning("database unavailable", request_id=request_id, error=type(exc).__name__)
    return error_response(translated, request_id)
