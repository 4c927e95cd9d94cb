"""Log lines gathered and written together (service/observability/log_lines.py): every
line arrives, in order, a warning at once and after what was gathered before it, the
request line with its client-chosen text redacted, and what is gathered at exit is still
written."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.support.processes import REPO_ROOT

KEY = "sk_live_" + "A" * 49
PROGRAM = textwrap.dedent(
    f"""
    import asyncio
    from service.observability.logs import configure_logging, get_logger, log_request

    configure_logging("info")
    log = get_logger("probe")

    async def main():
        log.info("first", n=1)
        log_request({{"request_id": "{KEY}", "method": "GET", "route": "/r", "status": 200,
                      "duration_ms": 0.5, "actor_id": None}})
        log.warning("second", n=2)  # written at once, after what came before it
        log.info("third", n=3)  # gathered; the exit writes it

    asyncio.run(main())
    """
)


def test_lines_arrive_in_order_and_a_warning_does_not_wait() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], cwd=REPO_ROOT, capture_output=True, timeout=60, check=True
    )
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    for line in lines:
        assert line.pop("timestamp").endswith("Z")
        assert isinstance(line.pop("pid"), int)
    assert lines == [
        {"n": 1, "event": "first", "level": "info"},
        {
            "request_id": "[redacted]", "method": "GET", "route": "/r", "status": 200,
            "duration_ms": 0.5, "actor_id": None, "event": "request", "level": "info",
        },
        {"n": 2, "event": "second", "level": "warning"},
        {"n": 3, "event": "third", "level": "info"},
    ]  # fmt: skip


FOREIGN = textwrap.dedent(
    f"""
    import logging
    from aiohttp.http_exceptions import BadHttpMessage
    from service.observability.logs import configure_logging

    configure_logging("info")
    logging.getLogger("asyncio").warning("loop slow %s", "{KEY}")
    try:
        1 / 0
    except ZeroDivisionError:
        logging.getLogger("asyncio").exception("callback failed")
    try:
        raise BadHttpMessage("Bad Header {KEY}")
    except BadHttpMessage:
        logging.getLogger("aiohttp.server").exception("Error handling request from %s", "1.2.3.4")
    """
)


def test_standard_library_records_are_structlog_lines() -> None:
    """Records of other libraries go through structlog's ProcessorFormatter: JSON lines
    with the logger, level, timestamp and pid, redacted; an aiohttp exception by its type
    only (it may quote what the client sent), a malformed request as a warning."""
    result = subprocess.run(
        [sys.executable, "-c", FOREIGN], cwd=REPO_ROOT, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for line in lines:
        assert set(line) >= {"event", "logger", "level", "timestamp", "pid"}, line
        assert line["timestamp"].endswith("Z")
    slow, failed, parse = lines
    assert (slow["logger"], slow["level"], slow["event"]) == (
        "asyncio", "warning", "loop slow [redacted]",
    )  # fmt: skip
    assert failed["error"] == "ZeroDivisionError"
    assert "Traceback" in failed["exception"]
    assert (parse["logger"], parse["level"], parse["error"]) == (
        "aiohttp.server", "warning", "BadHttpMessage",
    )  # fmt: skip
    assert "exception" not in parse
    assert KEY not in result.stdout


def test_request_line_timestamps_are_structlogs() -> None:
    """The request line's timestamp, formatted once a second, reads as structlog's ISO
    timestamp of the same moment (to the microsecond)."""
    import io
    from datetime import UTC, datetime

    from service.observability.log_lines import LineWriter
    from service.observability.logs import _RequestLines

    lines = _RequestLines(LineWriter(io.StringIO()))
    for now in (1_764_178_212.000001, 1_764_178_212.5, 1_764_178_213.999999, 1_800_000_000.25):
        text = lines.timestamp(now)
        assert len(text) == len("2026-11-26T17:43:32.123456Z")
        assert text.endswith("Z")
        expected = datetime.fromtimestamp(now, UTC)
        written = datetime.fromisoformat(text.replace("Z", "+00:00"))
        assert abs((written - expected).total_seconds()) <= 2e-6
