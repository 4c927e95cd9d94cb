"""The two middlewares: request context (id, errors, access log) and authentication.

Both are built by create_app around the objects they use (the metrics, the endpoint
table, the authenticator), and what they learn of a request lives in one `Exchange`
under one request key: every access to a request's own mapping is a Python call, and a
cached read made about a dozen of them."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence

from aiohttp import web
from aiohttp.typedefs import Middleware

from service.auth.authenticator import Authenticator
from service.auth.authorization import authorize
from service.auth.principal import Actor, Principal
from service.base.errors import RetryTransaction, ServiceError
from service.db.errors import service_unavailable, translate_db_error
from service.http.clients import client_address
from service.http.conventions import finish_headers
from service.http.responses import error_response
from service.http.routing import Endpoint, Handler, endpoint_for
from service.observability.logs import get_logger, log_request, request_lines_wanted
from service.observability.metrics import Metrics
from service.ratelimit.buckets import Decision
from service.settings.reader import IPNetwork

log = get_logger("service.http")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class Exchange:
    """One request as the middlewares see it: its id, and once authenticated its caller,
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


def _http_error(exc: web.HTTPException, request: web.Request) -> ServiceError:
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


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def answer_headers(request: web.Request) -> dict[str, str]:
    """The headers every answer carries: the request id and, for a limited request,
    where its bucket stands."""
    exchange = request[EXCHANGE]
    headers = {"X-Request-ID": exchange.request_id}
    decision = exchange.rate_limit
    if decision is not None:
        headers.update(decision.headers())
    return headers


def _answer_for(exc: Exception, request: web.Request, request_id: str) -> web.Response:
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


def request_context(metrics: Metrics, endpoints: dict[tuple[str, str], Endpoint]) -> Middleware:
    """Request id, errors as JSON bodies, the common headers, metrics and the access log."""

    @web.middleware
    async def context(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        incoming = request.headers.get("X-Request-ID", "")
        request_id = incoming if _REQUEST_ID.match(incoming) else os.urandom(16).hex()
        exchange = request[EXCHANGE] = Exchange(request_id)
        response: web.StreamResponse
        try:
            response = await handler(request)
        except ServiceError as err:
            response = error_response(err, request_id)
        except web.HTTPException as exc:
            if exc.status < 400:
                response = exc
            else:
                response = error_response(_http_error(exc, request), request_id)
        except RetryTransaction:
            response = error_response(service_unavailable(), request_id)
        except Exception as exc:
            if isinstance(exc, ConnectionResetError) and _client_gone(request):
                # The client left, or a read deadline (service/http/deadlines.py) closed
                # the connection mid-body: nobody reads this answer, the log line and
                # metrics do.
                response = web.Response(status=408)
            else:
                # Any other reset is the database's (a server dying mid-connect): a 503.
                response = _answer_for(exc, request, request_id)
        if not response.prepared:  # a streamed answer set them before its first byte
            response.headers.update(answer_headers(request))
        principal = exchange.principal
        if principal is not None:
            private = True
        else:
            endpoint = endpoint_for(request, endpoints)
            private = endpoint is not None and not endpoint.public
        finish_headers(request, response, private=private)
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else None
        elapsed = time.perf_counter() - started
        metrics.observe(request.method, route, response.status, elapsed)
        if request_lines_wanted():
            log_request(
                {
                    "request_id": request_id,
                    "method": request.method,
                    # The template, never the raw path: ids stay out of logs and metric
                    # labels alike.
                    "route": route,
                    "status": response.status,
                    "duration_ms": round(elapsed * 1000, 2),
                    "actor_id": principal.actor_id if principal else None,
                }
            )
        return response

    return context


def authenticate(
    authenticator: Authenticator,
    endpoints: dict[tuple[str, str], Endpoint],
    trusted_proxies: Sequence[IPNetwork],
) -> Middleware:
    """The caller of every credentialed route: API key or bearer token, its rate limit
    and its scopes. OPTIONS is a read like GET (read scope; read and admin on admin
    routes), credentialed wherever the path has a credentialed method; the service
    grants no CORS preflight (the console is served from the API's own origin)."""
    options_of = _options_endpoints(endpoints)

    @web.middleware
    async def authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.match_info.http_exception is not None:
            return await handler(request)  # unknown route or method: 404/405 as they are
        endpoint = endpoint_for(request, endpoints)
        if endpoint is None and request.method == "OPTIONS":
            resource = request.match_info.route.resource
            endpoint = options_of.get(resource.canonical) if resource is not None else None
        if endpoint is None or endpoint.public:
            return await handler(request)
        exchange = request[EXCHANGE]
        headers = request.headers
        address = client_address(
            request.remote, headers.getall("X-Forwarded-For", ()), trusted_proxies
        )
        exchange.client_address = address
        admission = await authenticator.admit(
            headers.get("X-API-Key"), headers.get("Authorization"), address
        )
        exchange.rate_limit = admission.decision
        if admission.error is not None:
            raise admission.error
        assert admission.principal is not None
        exchange.principal = admission.principal
        method = "GET" if endpoint.read_scope else request.method
        authorize(admission.principal, method, endpoint.admin)
        return await handler(request)

    return authenticated


def _options_endpoints(endpoints: dict[tuple[str, str], Endpoint]) -> dict[str, Endpoint]:
    """Per path, the endpoint whose credentials OPTIONS asks for: public only when every
    method of the path is, admin when any is (the scopes then come from OPTIONS)."""
    by_path: dict[str, list[Endpoint]] = {}
    for endpoint in endpoints.values():
        by_path.setdefault(endpoint.path, []).append(endpoint)
    return {
        path: min(found, key=lambda e: (e.public, not e.admin)) for path, found in by_path.items()
    }
