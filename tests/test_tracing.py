"""OpenTelemetry traces (service/observability/tracing.py) through the SDK's in-memory exporter: a
request with a W3C traceparent gives a server span in the caller's trace, one child span
per named query, and the request's log line carries the trace id. Without OTEL_* set,
tracing stays off and OpenTelemetry is not even imported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import structlog
from aiohttp import web
from aiohttp.test_utils import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_span_id, format_trace_id

from service.app import create_app
from service.http.appkeys import QUERIES
from service.observability import tracing
from service.settings.options import Settings
from tests.support.api import create_tenant

CURRENT_DB_ATTRIBUTES = {
    "db.system.name",
    "db.query.summary",
    "db.query.text",
    "db.operation.name",
    "db.namespace",
    "server.address",
    "server.port",
}
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.install(provider)
    yield spans
    tracing.shutdown()


@pytest.fixture
def app(settings: Settings, exporter: InMemorySpanExporter) -> web.Application:
    return create_app(settings)  # after install(): the tracing middleware is in


async def test_a_request_continues_the_callers_trace(
    client: TestClient, admin: dict[str, str], exporter: InMemorySpanExporter, db_url: str
) -> None:
    target = urlsplit(db_url)
    database, db_host, db_port = target.path.lstrip("/"), target.hostname, target.port or 5432
    tenant = await create_tenant(client, admin)
    exporter.clear()
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        resp = await client.get(
            f"/api/v1/tenants/{tenant['id']}", headers={**admin, "traceparent": TRACEPARENT}
        )
        assert resp.status == 200

    spans = exporter.get_finished_spans()
    (server,) = [s for s in spans if s.kind == SpanKind.SERVER]
    assert server.name == "GET /api/v1/tenants/{id}"
    assert format_trace_id(server.context.trace_id) == TRACE_ID
    assert server.parent is not None
    assert format_span_id(server.parent.span_id) == PARENT_ID
    host = client.server.host
    # The HTTP server attributes of the current semantic conventions, and no others.
    assert server.attributes == {
        "http.request.method": "GET",
        "http.route": "/api/v1/tenants/{id}",
        "http.response.status_code": 200,
        "url.path": f"/api/v1/tenants/{tenant['id']}",
        "url.scheme": "http",
        "server.address": host,
        "server.port": client.server.port,
        "network.protocol.version": "1.1",
    }
    queries = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert queries, [s.name for s in spans]
    known = set(client.app[QUERIES])
    for span in queries:
        assert span.name in known
        assert span.context.trace_id == server.context.trace_id
        assert span.parent is not None
        assert span.parent.span_id == server.context.span_id
        attributes = dict(span.attributes or {})
        # The database attributes of the current conventions only (db.system, db.statement
        # and db.name are the deprecated ones).
        assert set(attributes) <= CURRENT_DB_ATTRIBUTES, attributes
        assert attributes["db.system.name"] == "postgresql"
        assert attributes["db.query.summary"] == span.name
        assert attributes["db.query.text"] == client.app[QUERIES][span.name].sql
        assert attributes["db.namespace"] == database
        if db_host is not None and not db_host.startswith("/"):  # TCP, not a Unix socket
            assert (attributes["server.address"], attributes["server.port"]) == (
                db_host, db_port,
            )  # fmt: skip
    get = [s for s in queries if s.name == "get_tenant"]
    assert get[0].attributes["db.operation.name"] == "SELECT"
    assert "get_tenant" in {s.name for s in queries}

    (line,) = [entry for entry in logs if entry["event"] == "request"]
    assert line["trace_id"] == TRACE_ID
    assert line["route"] == "/api/v1/tenants/{id}"


async def test_without_a_traceparent_a_new_trace_starts(
    client: TestClient, admin: dict[str, str], exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    assert (await client.get("/api/v1/tenants", headers=admin)).status == 200
    (server,) = [s for s in exporter.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert server.parent is None
    assert format_trace_id(server.context.trace_id) != TRACE_ID


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
         False),
    ],
)  # fmt: skip
def test_tracing_is_opt_in_through_the_otel_variables(env: dict[str, str], on: bool) -> None:
    assert tracing.requested(env) is on


def test_off_nothing_of_opentelemetry_is_imported() -> None:
    code = (
        "import sys\n"
        "from service.app import create_app\n"
        "from service.server import serve\n"
        "from service.observability import tracing\n"
        "assert not tracing.configure({}), 'on without OTEL_*'\n"
        "assert tracing.TRACER is None and tracing.middlewares() == []\n"
        # redis imports the OpenTelemetry API itself when it is installed; the tracing
        # SDK, the propagator and the exporter are ours to import, and only when on.
        "ours = ('opentelemetry.sdk.trace', 'opentelemetry.exporter',\n"
        "        'opentelemetry.trace.propagation.tracecontext')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(ours))\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_configure_sets_up_the_otlp_exporter_and_refuses_console() -> None:
    try:
        # Nothing is sent: no span is made before shutdown.
        assert tracing.configure({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
        assert tracing.TRACER is not None
        assert tracing.middlewares() == [tracing.trace_request]
    finally:
        tracing.shutdown()
    assert tracing.TRACER is None
    # `console` would print multi-line text into the JSON log stream.
    assert not tracing.configure({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing.TRACER is None
