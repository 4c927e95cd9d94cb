"""A real `tenant-service serve`: every line it writes on stdout and stderr is JSON, none
carries a key, a secret or what a client sent, the development admin key goes to a file
under DATA_DIR (not the stream), and a failed webhook delivery is logged at warning."""

from __future__ import annotations

import json
import os
import socket
import stat
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from service.bootstrap import KEY_FILE
from tests.conftest import HMAC_SECRET, base_env
from tests.support.processes import REPO_ROOT, ServiceProcess, free_port

WAIT_SECONDS = 30.0
WEBHOOK_SECRET = "whsec_" + "A" * 32
PROBE = "client-sent-this-text"


def _call(url: str, method: str, headers: dict[str, str], body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback only
        url, data=data, method=method, headers={**headers, "Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:  # noqa: S310
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _closed_port() -> int:
    # Bound and never listened on: a delivery to it is refused at once.
    return free_port()


def _lines(service: ServiceProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in service.output().splitlines() if line.strip()]


def _until(service: ServiceProcess, event: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        for line in service.output().splitlines():
            if f'"{event}"' in line:
                parsed: dict[str, Any] = json.loads(line)
                return parsed
        time.sleep(0.05)
    raise AssertionError(f"no {event!r} line:\n{service.output()[-4000:]}")


def test_every_line_is_json_and_the_key_stays_off_the_stream(
    fresh_db_url: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    env = base_env(
        fresh_db_url, data_dir, LOG_LEVEL="info", WEBHOOK_ALLOW_HTTP="true",
        WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32", WEBHOOK_RETRY_BASE_SECONDS="0.2",
        WEBHOOK_MAX_ATTEMPTS="2",
    )  # fmt: skip
    service = ServiceProcess({"PATH": os.environ.get("PATH", ""), **env}, tmp_path, cwd=REPO_ROOT)
    try:
        service.wait_ready()
        created = _until(service, "development admin key created; it is in this file only")
        key_path = Path(created["path"])
        assert created["level"] == "warning"
        assert key_path == (data_dir / KEY_FILE).resolve()
        assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
        key = key_path.read_text().strip()
        assert key.startswith("sk_test_")
        headers = {"X-API-Key": key}

        hook = {
            "url": f"http://127.0.0.1:{_closed_port()}/hook",
            "events": ["tenant.created"],
            "secret": WEBHOOK_SECRET,
        }
        status, _ = _call(f"{service.url}/api/v1/webhooks", "POST", headers, hook)
        assert status == 201
        status, _ = _call(
            f"{service.url}/api/v1/tenants", "POST", headers, {"name": PROBE, "slug": "probe"}
        )
        assert status == 201
        # Bad input carrying a key and text of the client's own: answered, never echoed to the log.
        status, _ = _call(
            f"{service.url}/api/v1/tenants", "POST", headers, {"name": 5, "slug": key}
        )
        assert status == 400
        status, _ = _call(f"{service.url}/api/v1/{PROBE}?key={key}", "GET", headers)
        assert status == 404
        # A malformed request line makes aiohttp's low-level server log through `logging`.
        with socket.create_connection(("127.0.0.1", service.port), timeout=5) as raw:
            raw.sendall(f"GET /{PROBE} HTTP/1.1\r\nHost: x\r\nBad Header {key}\r\n\r\n".encode())
            raw.recv(4096)

        failed = _until(service, "delivery attempt failed")
        assert failed["level"] == "warning"
        dead = _until(service, "delivery failed; moved to the dead letters")
        assert dead["level"] == "error"
    finally:
        code = service.stop()
    assert code == 0, service.output()[-4000:]

    text = service.output()
    lines = _lines(service)  # raises on any line that is not JSON
    # aiohttp's own record of the malformed request came through the JSON formatter too.
    assert any(line.get("logger") == "aiohttp.server" for line in lines), lines
    # It is the client's mistake (answered 400): a warning, not an error.
    server_lines = [line for line in lines if line.get("logger") == "aiohttp.server"]
    assert {line["level"] for line in server_lines} == {"warning"}, server_lines
    assert all(isinstance(line, dict) and "event" in line and "level" in line for line in lines)
    events = [line["event"] for line in lines]
    for expected in ("service started", "service stopping", "service stopped"):
        assert expected in events, (expected, events)
    for secret in (key, WEBHOOK_SECRET, HMAC_SECRET, PROBE, "/hook"):
        assert secret not in text, secret
