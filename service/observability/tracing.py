"""OpenTelemetry traces, opt-in through the standard OTEL_* variables.

Off unless OTEL_TRACES_EXPORTER (other than `none`) or an OTLP endpoint
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and never with
OTEL_SDK_DISABLED=true. Off, nothing of OpenTelemetry is imported and the cost per
request and per query is one check of `TRACER` against None.

On: a server span per request named `METHOD /route/{template}` that continues the
caller's W3C `traceparent`, its trace id bound into every log line written while the
request runs, and a client span per named query (the name from sql/queries) inside it.
Queries outside a request (the delivery worker's polling) make no spans: a root span per
poll would drown the traces that matter.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import structlog
from aiohttp import web

from service.observability.logs import get_logger

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Tracer

log = get_logger(__name__)
# Set by configure()/install(); None means tracing is off.
TRACER: Tracer | None = None
_PROVIDER: TracerProvider | None = None
INSTRUMENTATION = "tenant-service"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def requested(env: Mapping[str, str] | None = None) -> bool:
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return any(env.get(name, "").strip() for name in _ENDPOINTS)


def configure(env: Mapping[str, str] | None = None) -> bool:
    """Start tracing when the environment asks for it; True when it is on."""
    env = os.environ if env is None else env
    if not requested(env):
        return False
    exporters = [
        name.strip() for name in env.get("OTEL_TRACES_EXPORTER", "otlp").lower().split(",")
    ]
    if exporters != ["otlp"]:
        # `console` would write multi-line text into the JSON log stream.
        log.error("OTEL_TRACES_EXPORTER not supported; tracing stays off", supported="otlp")
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.error("tracing requested but the otel extra is not installed; tracing stays off")
        return False
    # Resource.create() reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
    resource = Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "tenant-service")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    install(provider)
    log.info("tracing on", exporter="otlp")
    return True


def install(provider: TracerProvider) -> None:
    """Trace through this provider (configure() above; the tests' in-memory exporter)."""
    global TRACER, _PROVIDER
    _PROVIDER = provider
    TRACER = provider.get_tracer(INSTRUMENTATION)


def shutdown() -> None:
    """Flush and stop (the end of serve); tracing is off afterwards."""
    global TRACER, _PROVIDER
    provider, _PROVIDER, TRACER = _PROVIDER, None, None
    if provider is not None:
        provider.shutdown()


def middlewares() -> list[Any]:
    """The request-span middleware when tracing is on (outermost), else none."""
    return [trace_request] if TRACER is not None else []


@web.middleware
async def trace_request(request: web.Request, handler: Handler) -> web.StreamResponse:
    tracer = TRACER
    if tracer is None:
        return await handler(request)
    from opentelemetry.trace import SpanKind, Status, StatusCode, format_trace_id
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    parent = TraceContextTextMapPropagator().extract(dict(request.headers))
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else None
    if route == "/{tail:.*}":  # service/http/routing.py's NO_ROUTE: no route matched
        route = None
    name = f"{request.method} {route}" if route else request.method
    with tracer.start_as_current_span(name, context=parent, kind=SpanKind.SERVER) as span:
        span.set_attributes(server_attributes(request))
        if route:
            span.set_attribute("http.route", route)
        trace_id = format_trace_id(span.get_span_context().trace_id)
        with structlog.contextvars.bound_contextvars(trace_id=trace_id):
            response = await handler(request)
        span.set_attribute("http.response.status_code", response.status)
        if response.status >= 500:
            span.set_attribute("error.type", str(response.status))
            span.set_status(Status(StatusCode.ERROR))
        return response


def server_attributes(request: web.Request) -> dict[str, str | int]:
    """The HTTP server span's attributes of the current semantic conventions (the stable
    HTTP ones): method, path, scheme, the address and port the client asked for (Host),
    the protocol version. The query string is left out: it may carry what a client should
    not have put there."""
    scheme = request.scheme
    asked = urlsplit(f"//{request.host}")
    try:
        port = asked.port
    except ValueError:  # a Host header with a port that is not a number
        port = None
    attributes: dict[str, str | int] = {
        "http.request.method": request.method,
        "url.path": request.path,
        "url.scheme": scheme,
        "network.protocol.version": f"{request.version.major}.{request.version.minor}",
        "server.port": port or (443 if scheme == "https" else 80),
    }
    if asked.hostname:
        attributes["server.address"] = asked.hostname
    return attributes


@contextlib.asynccontextmanager
async def query_span(name: str, sql: str, conn: object) -> AsyncIterator[None]:
    """A client span for one named query, when a request span is current: named after
    the query (its low-cardinality summary), with the database attributes of the current
    semantic conventions only."""
    from opentelemetry import trace

    tracer = TRACER
    if tracer is None or not trace.get_current_span().get_span_context().is_valid:
        yield
        return
    with tracer.start_as_current_span(name, kind=trace.SpanKind.CLIENT) as span:
        span.set_attributes(query_attributes(name, sql, conn))
        yield


_OPERATIONS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"})


def query_attributes(name: str, sql: str, conn: object) -> dict[str, str | int]:
    """db.* of one named query. The text is the parameterised SQL ($1, $2 ...), never a
    value. Where asyncpg keeps the database name and address (as the official asyncpg
    instrumentation reads them): db.namespace, server.address, server.port."""
    attributes: dict[str, str | int] = {
        "db.system.name": "postgresql",
        "db.query.summary": name,
        "db.query.text": sql,
    }
    words = sql.split(None, 1)
    if words and words[0].upper() in _OPERATIONS:  # a WITH ... names no single operation
        attributes["db.operation.name"] = words[0].upper()
    database = getattr(getattr(conn, "_params", None), "database", None)
    if isinstance(database, str):
        attributes["db.namespace"] = database
    address = getattr(conn, "_addr", None)
    if isinstance(address, tuple) and len(address) == 2:
        attributes["server.address"] = str(address[0])
        attributes["server.port"] = int(address[1])
    return attributes
