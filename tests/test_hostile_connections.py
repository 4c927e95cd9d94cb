"""Issue 16, items 8 and 12, against a real `serve` process: an oversized header leaves
only JSON lines without request content in the log, and a connection that never finishes
its headers (or its body) is closed after HEADER_TIMEOUT_SECONDS (BODY_TIMEOUT_SECONDS)."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import HMAC_SECRET, base_env
from tests.support.live import admin_key
from tests.support.processes import REPO_ROOT, ServiceProcess

MARKER = "QzXv"  # the header value is this, repeated: no fragment of it may be logged


@pytest.fixture
async def admin(fresh_db_url: str) -> str:
    # A key exists, so the service prints no development banner (the one non-JSON output).
    return await admin_key(fresh_db_url, HMAC_SECRET)


@pytest.fixture
def service(fresh_db_url: str, tmp_path: Path, admin: str) -> Iterator[ServiceProcess]:
    env = base_env(
        fresh_db_url,
        tmp_path,
        LOG_LEVEL="debug",
        HEADER_TIMEOUT_SECONDS="2",
        BODY_TIMEOUT_SECONDS="2",
    )
    proc = ServiceProcess({"PATH": os.environ.get("PATH", ""), **env}, tmp_path, cwd=REPO_ROOT)
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def _seconds_until_closed(port: int, data: bytes, limit: float = 10.0) -> float:
    """Send data, then wait (at most limit seconds) for the server to close the socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as sock:
        sock.sendall(data)
        started = time.monotonic()
        try:
            while sock.recv(65536):
                pass
        except TimeoutError:
            return float("inf")
        return time.monotonic() - started


def test_an_oversized_header_logs_json_without_its_content(service: ServiceProcess) -> None:
    value = MARKER * 4096  # 16 KiB
    request = (
        "GET /api/v1/tenants HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"X-Large: {value}\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = _exchange(service.port, request)
    assert answer.split(b" ", 2)[1] in (b"400", b"431"), answer[:200]
    assert service.stop() == 0
    output = service.output()
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines
    for line in lines:
        assert line.startswith("{"), line[:300]
        json.loads(line)
        assert MARKER not in line, line[:300]
    refused = [json.loads(line) for line in lines if '"aiohttp.server"' in line]
    assert refused, output[-3000:]


def test_a_connection_that_never_finishes_its_headers_is_closed(
    service: ServiceProcess,
) -> None:
    # Closed by the 2 s deadline: not at once, and not after aiohttp's keep-alive hour.
    assert 1.5 < _seconds_until_closed(service.port, b"GET /api/v1/tena") < 5
    assert 1.5 < _seconds_until_closed(service.port, b"GET /health HTTP/1.1\r\nHost: x\r\n") < 5
    # On a kept-alive connection the deadline starts again with the next request.
    kept = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /hea"
    assert 1.5 < _seconds_until_closed(service.port, kept) < 5


def test_a_body_that_never_arrives_is_cut_off(service: ServiceProcess, admin: str) -> None:
    # Authenticated, so the handler is reading the body when the deadline passes.
    request = (
        "POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"X-API-Key: {admin}\r\nContent-Length: 100\r\n\r\n" + '{"name":'
    ).encode()
    assert 1.5 < _seconds_until_closed(service.port, request) < 5
    assert service.stop() == 0
    lines = [json.loads(line) for line in service.output().splitlines() if line.strip()]
    events = [line["event"] for line in lines]
    assert "connection closed: request body incomplete" in events
    assert [line["status"] for line in lines if line["event"] == "request"][-1] == 408
    assert not [line for line in lines if line["level"] == "error"], lines


def test_a_slow_but_steady_client_is_still_served(service: ServiceProcess) -> None:
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        for part in (b"GET /health HTTP/1.1\r\n", b"Host: x\r\n", b"Connection: close\r\n"):
            sock.sendall(part)
            time.sleep(0.2)  # 0.6 s in all, well inside the 2 s bound
        sock.sendall(b"\r\n")
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


def test_a_kept_alive_connection_outlives_the_header_deadline(service: ServiceProcess) -> None:
    """Idle keep-alive time is not a late head: after a whole request (with a body in the
    same packet) the connection stays usable past HEADER_TIMEOUT_SECONDS."""
    post = (
        b"POST /api/v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(post)
        assert sock.recv(65536).startswith(b"HTTP/1.1 401")
        time.sleep(3)  # longer than the 2 s header deadline: the point of the test
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
