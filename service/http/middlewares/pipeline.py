"""Every route's handler inside one composed coroutine: request id, authentication, rate
limit and scopes, the data middlewares, errors as JSON bodies, the common headers,
metrics and the access log.

These were four aiohttp middlewares (with aiohttp's own current-app layer, five
coroutines and a partial per request), each looking up what the route already knew: its
declared endpoint, its template, whether it needs credentials and which scopes. Here
each route's handler is wrapped once, when it is registered, with all of that worked
out; a request pays for one extra coroutine. Paths no route matches reach a catch-all
route wrapped the same way, so they get the same JSON 404 as before.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Sequence

from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware

from service.auth.authenticator import Authenticator
from service.auth.authorization import SAFE_METHODS, authorize, required_scopes
from service.auth.challenges import challenge
from service.base.errors import RetryTransaction, ServiceError
from service.db.consistency import HEADER
from service.db.errors import service_unavailable
from service.http.conventions import SERVER, compress_if_asked
from service.http.middlewares.clients import client_address
from service.http.middlewares.exchange import EXCHANGE, Exchange, answer_for, http_error
from service.http.rendered_answers import RenderedAnswer
from service.http.responses import error_response
from service.http.routing import Endpoint, Handler
from service.observability.logs import log_request_line, request_lines_wanted
from service.observability.metrics import Metrics
from service.settings.reader import IPNetwork

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class Pipeline:
    """What every request goes through, around its route's handler."""

    def __init__(
        self,
        metrics: Metrics,
        authenticator: Authenticator,
        trusted_proxies: Sequence[IPNetwork],
        data: Middleware,
    ) -> None:
        self.metrics = metrics
        self.authenticator = authenticator
        self.trusted_proxies = tuple(trusted_proxies)
        # Consistency, read-your-writes and idempotency (service/http/middlewares/data_layers.py):
        # a plain read needs none of them.
        self.data = data
        # Request ids: this process's random half and a counter (os.urandom per request
        # was a system call on every request; an id only has to be unique, not secret).
        self._id_prefix = os.urandom(8).hex()
        self._id_counter = itertools.count(1)

    def wrap(self, handler: Handler, endpoint: Endpoint | None, route: str | None) -> Handler:
        """`handler` of `endpoint` (None: a public route of no declared endpoint) whose
        template is `route` (None: no route matched), inside the pipeline."""
        metrics = self.metrics
        admit = self.authenticator.admit
        proxies = self.trusted_proxies
        data = self.data
        credentialed = endpoint is not None and not endpoint.public
        # A POST that only reads (batch reads, flag evaluations) needs what a GET needs.
        scope_method = "GET" if endpoint is not None and endpoint.read_scope else None
        required = frozenset(
            required_scopes(scope_method or endpoint.method, endpoint.admin)
            if endpoint is not None
            else ()
        )
        admin = endpoint is not None and endpoint.admin
        id_prefix, id_counter = self._id_prefix, self._id_counter

        async def serve(request: web.Request) -> web.StreamResponse:
            started = time.perf_counter()
            headers = request.headers
            incoming = headers.get("X-Request-ID")
            if incoming is not None and _REQUEST_ID.fullmatch(incoming):
                request_id = incoming
            else:
                request_id = f"{id_prefix}{next(id_counter):016x}"
            exchange = request[EXCHANGE] = Exchange(request_id)
            method = request.method
            response: web.StreamResponse
            try:
                if credentialed:
                    address = (
                        client_address(
                            request.remote, headers.getall("X-Forwarded-For", ()), proxies
                        )
                        if proxies
                        else request.remote  # what client_address answers without proxies
                    )
                    exchange.client_address = address
                    principal, error, decision = await admit(
                        headers.get("X-API-Key"), headers.get("Authorization"), address
                    )
                    exchange.rate_limit = decision
                    if error is not None:
                        raise error
                    assert principal is not None
                    exchange.principal = principal
                    if not required <= principal.scopes:
                        authorize(principal, scope_method or method, admin)
                if method in SAFE_METHODS and HEADER not in headers:
                    response = await handler(request)
                else:
                    response = await data(request, handler)
            except ServiceError as err:
                response = error_response(err, request_id)
            except web.HTTPException as exc:
                if exc.status < 400:
                    response = exc
                else:
                    response = error_response(http_error(exc, request), request_id)
            except RetryTransaction:
                response = error_response(service_unavailable(), request_id)
            except Exception as exc:
                if isinstance(exc, ConnectionResetError) and _client_gone(request):
                    # The client left, or a read deadline (service/http/deadlines.py)
                    # closed the connection mid-body: nobody reads this answer, the log
                    # line and metrics do.
                    response = web.Response(status=408)
                else:
                    # Any other reset is the database's (a server dying mid-connect).
                    response = answer_for(exc, request, request_id)
            out = response.headers
            decision = exchange.rate_limit
            if (
                type(response) is RenderedAnswer
                and credentialed
                and decision is not None
                and decision.allowed
                and response.sendable_as_bytes(request)
            ):
                # Its head composed here as bytes (service/http/rendered_answers.py).
                response.set_head(request_id, decision.header_lines())
            elif response.prepared:  # a streamed answer set its headers before its first byte
                out[hdrs.SERVER] = SERVER
                compress_if_asked(request, response)
            else:
                fields = decision.headers() if decision is not None else {}
                fields["X-Request-ID"] = request_id
                fields[hdrs.SERVER] = SERVER
                if credentialed and hdrs.CACHE_CONTROL not in out:
                    fields[hdrs.CACHE_CONTROL] = "no-store"
                if decision is None or decision.allowed:
                    # No handler sets these (a refusal's Retry-After aside): appending
                    # them at once costs a fifth of replacing them one by one.
                    out.extend(fields)
                else:
                    out.update(fields)
                if response.status in (401, 403):
                    refused = challenge(response.status, headers)
                    if refused is not None:
                        out["WWW-Authenticate"] = refused
                compress_if_asked(request, response)
            elapsed = time.perf_counter() - started
            status = response.status
            metrics.observe(method, route, status, elapsed)
            if request_lines_wanted():
                principal = exchange.principal
                # The template, never the raw path: ids stay out of logs and metric
                # labels alike.
                log_request_line(
                    request_id,
                    method,
                    route,
                    status,
                    elapsed,
                    principal.actor_id if principal else None,
                )
            return response

        return serve

    def not_found(self) -> Handler:
        """The catch-all route's handler: a JSON 404 for a path no route matches."""

        async def no_route(request: web.Request) -> web.StreamResponse:
            raise ServiceError("NOT_FOUND", f"no route for {request.path}")

        return self.wrap(no_route, None, None)


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()
