"""The two middlewares: request context (id, errors, access log) and authentication."""

from __future__ import annotations

import os
import re
import time

from aiohttp import web

from service.auth.authorization import authorize
from service.auth.principal import Actor, Principal
from service.db.errors import service_unavailable, translate_db_error
from service.errors import RetryTransaction, ServiceError
from service.http.appkeys import AUTHENTICATOR, ENDPOINTS, METRICS, SETTINGS
from service.http.clients import client_address
from service.http.conventions import finish_headers
from service.http.responses import error_response
from service.http.routing import Handler, endpoint_for
from service.logs import get_logger, log_request
from service.ratelimit.buckets import Decision

log = get_logger("service.http")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
REQUEST_ID = web.RequestKey("request_id", str)
PRINCIPAL = web.RequestKey("principal", Principal)
RATE_LIMIT = web.RequestKey("rate_limit", Decision)
CLIENT_ADDRESS = web.RequestKey("client_address", str)
ROUTE_CODES = {
    400: "VALIDATION_ERROR",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def principal_of(request: web.Request) -> Principal:
    return request[PRINCIPAL]


def actor_of(request: web.Request) -> Actor:
    principal = principal_of(request)
    return Actor(
        actor_id=principal.actor_id,
        actor_type=principal.actor_type,
        request_id=request[REQUEST_ID],
        ip_address=request.get(CLIENT_ADDRESS, request.remote),
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
    headers = {"X-Request-ID": request[REQUEST_ID]}
    decision = request.get(RATE_LIMIT)
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


@web.middleware
async def request_context(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    incoming = request.headers.get("X-Request-ID", "")
    request_id = incoming if _REQUEST_ID.match(incoming) else os.urandom(16).hex()
    request[REQUEST_ID] = request_id
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
            # The client left, or a read deadline (service/http/deadlines.py) closed the
            # connection mid-body: nobody reads this answer, the log line and metrics do.
            response = web.Response(status=408)
        else:
            # Any other reset is the database's (a server dying mid-connect): a 503.
            response = _answer_for(exc, request, request_id)
    if not response.prepared:  # a streamed answer set them before its first byte
        response.headers.update(answer_headers(request))
    principal = request.get(PRINCIPAL)
    endpoint = endpoint_for(request, request.app[ENDPOINTS])
    finish_headers(
        request,
        response,
        private=principal is not None or (endpoint is not None and not endpoint.public),
    )
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else None
    elapsed = time.perf_counter() - started
    request.app[METRICS].observe(request.method, route, response.status, elapsed)
    log_request(
        {
            "request_id": request_id,
            "method": request.method,
            # The template, never the raw path: ids stay out of logs and metric labels alike.
            "route": route,
            "status": response.status,
            "duration_ms": round(elapsed * 1000, 2),
            "actor_id": principal.actor_id if principal else None,
        }
    )
    return response


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.match_info.http_exception is not None:
        return await handler(request)  # unknown route or method: 404/405 as they are
    endpoint = endpoint_for(request, request.app[ENDPOINTS])
    if endpoint is None or endpoint.public:
        return await handler(request)
    address = client_address(
        request.remote,
        request.headers.getall("X-Forwarded-For", ()),
        request.app[SETTINGS].trusted_proxies,
    )
    if address is not None:
        request[CLIENT_ADDRESS] = address
    admission = await request.app[AUTHENTICATOR].admit(
        request.headers.get("X-API-Key"), request.headers.get("Authorization"), address
    )
    if admission.decision is not None:
        request[RATE_LIMIT] = admission.decision
    if admission.error is not None:
        raise admission.error
    assert admission.principal is not None
    request[PRINCIPAL] = admission.principal
    authorize(admission.principal, request.method, endpoint.admin)
    return await handler(request)
