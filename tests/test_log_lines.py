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


def test_common_request_lines_are_the_same_bytes_as_the_general_ones() -> None:
    """The request line written out directly (an id of letters and digits, no bound
    context) is byte for byte what the general path (a dict through orjson) writes."""
    import io
    import random

    import orjson

    from service.observability.log_lines import LineWriter
    from service.observability.logs import _RequestLines

    lines = _RequestLines(LineWriter(io.StringIO()))
    chooser = random.Random(7)
    routes = [None, "/api/v1/tenants/{id}", "/api/v1/tenants/{id}/config/{key}", "/health"]
    actors = [None, "01a21e0c-6ace-7396-a026-a1f5c59d74cc", 'user "1" \\ é \n', "sub|x"]
    ids = ["44fb41cfadc507a00000000000000001", "abcXYZ09", "é1", "٣٣"]
    for _ in range(2000):
        record = (
            chooser.choice(ids),
            chooser.choice(["GET", "PUT", "DELETE", "OPTIONS"]),
            chooser.choice(routes),
            chooser.choice([200, 201, 304, 404, 429, 500]),
            chooser.choice([0.0, 0.01, round(chooser.uniform(0, 5000), 2), 12345.67, 1e-05]),
            chooser.choice(actors),
            1_764_178_212 + chooser.random() * 100,
            None,
        )
        fast = lines.render([record])
        assert fast == lines.render([(*record[:-1], {})])  # an empty context: the general path
        general = orjson.loads(fast)
        request_id, method, route, status, duration_ms, actor_id, at, _ = record
        assert general == {
            "request_id": request_id,
            "method": method,
            "route": route,
            "status": status,
            "duration_ms": duration_ms,
            "actor_id": actor_id,
            "event": "request",
            "level": "info",
            "timestamp": lines.timestamp(at),
            "pid": lines._pid,
        }
