"""Where log lines go: one writer per stream, shared by structlog and the standard library.

Lines at info and below (one per request) are gathered and written together at most
FLUSH_AFTER_SECONDS later, or at once past FLUSH_AT_BYTES: a write system call per
request was a twentieth of a cached read's cost. A warning or an error is written at
once, after everything gathered before it, so order is kept and nothing that needs
attention waits. Outside a running event loop (one-shot commands, threads) every line is
written at once. What is gathered is written at exit; a process killed outright loses at
most the last FLUSH_AFTER_SECONDS of info lines (docs/decisions/edge.md).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any, TextIO

FLUSH_AFTER_SECONDS = 0.05
FLUSH_AT_BYTES = 64 * 1024
# Records kept unformatted (`later`) at most: about FLUSH_AT_BYTES of request lines.
FLUSH_AT_RECORDS = 256
# Formats a batch of records as their lines, each ending in a newline.
Renderer = Callable[[list[Any]], bytes]


class LineWriter:
    def __init__(self, stream: TextIO) -> None:
        self._text = stream
        self._binary = getattr(stream, "buffer", None)
        self._pending = bytearray()
        self._scheduled = False
        self._lock = threading.Lock()
        # Lines not yet formatted (`later`): formatted, in order, before any other line
        # joins the pending ones and before anything is written.
        self._records: list[Any] = []
        self._render: Renderer | None = None
        atexit.register(self.flush)

    def later(self, record: Any, render: Renderer) -> None:
        """Write the line `render` makes of `record` within FLUSH_AFTER_SECONDS. Nothing
        is formatted now: the records gathered are formatted together when written."""
        with self._lock:
            self._records.append(record)
            self._render = render
            if len(self._records) >= FLUSH_AT_RECORDS:
                self._write_pending()
                return
            if self._scheduled:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._write_pending()
                return
            self._scheduled = True
            loop.call_later(FLUSH_AFTER_SECONDS, self.flush)

    def _take_records(self) -> None:
        """Format the gathered records into the pending lines (the lock is held)."""
        if self._records and self._render is not None:
            records, self._records = self._records, []
            self._pending += self._render(records)

    def soon(self, line: bytes) -> None:
        """Write `line` within FLUSH_AFTER_SECONDS."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.now(line)
            return
        with self._lock:
            self._take_records()
            self._pending += line
            self._pending += b"\n"
            if len(self._pending) >= FLUSH_AT_BYTES:
                self._write_pending()
            elif not self._scheduled:
                self._scheduled = True
                loop.call_later(FLUSH_AFTER_SECONDS, self.flush)

    def now(self, line: bytes) -> None:
        """Write `line` (and what was gathered before it) now."""
        with self._lock:
            self._take_records()
            self._pending += line
            self._pending += b"\n"
            self._write_pending()

    def flush(self) -> None:
        with self._lock:
            self._scheduled = False
            if self._pending or self._records:
                self._write_pending()

    def _write_pending(self) -> None:
        self._take_records()
        data, self._pending = bytes(self._pending), bytearray()
        try:
            if self._binary is None:  # a text stream without bytes under it (StringIO)
                self._text.write(data.decode())
            else:
                self._text.flush()  # what was printed before goes first
                self._binary.write(data)
                self._binary.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream: logging must never fail a request


class StructlogLines:
    """structlog's logger: info and debug gathered, every other level written at once."""

    def __init__(self, writer: LineWriter) -> None:
        self._writer = writer

    def info(self, message: bytes) -> None:
        self._writer.soon(message)

    debug = info

    def warning(self, message: bytes) -> None:
        self._writer.now(message)

    msg = log = warn = error = err = critical = exception = fatal = failure = warning


class StructlogLinesFactory:
    def __init__(self, writer: LineWriter) -> None:
        self._logger = StructlogLines(writer)

    def __call__(self, *args: Any) -> StructlogLines:
        return self._logger


class StdlibLines(logging.Handler):
    """The standard library's records (aiohttp, asyncio) through the same writer."""

    def __init__(self, writer: LineWriter, formatter: logging.Formatter) -> None:
        super().__init__()
        self._writer = writer
        self.setFormatter(formatter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record).encode()
        except Exception:  # as logging.StreamHandler does
            self.handleError(record)
            return
        if record.levelno >= logging.WARNING:
            self._writer.now(line)
        else:
            self._writer.soon(line)
