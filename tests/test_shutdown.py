"""SIGTERM during a slow request: the listener closes at once, the request still
completes, then the pool closes and the process exits 0."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import asyncpg

from tests.conftest import HMAC_SECRET, base_env
from tests.support.live import admin_key
from tests.support.processes import REPO_ROOT, ServiceProcess

WAIT_SECONDS = 20.0


def _request(url: str, method: str, headers: dict[str, str], body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - loopback only
        url, data=data, method=method, headers={**headers, "Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as resp:  # noqa: S310
        return resp.status, json.loads(resp.read())


def _refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


async def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_sigterm_lets_the_request_in_flight_finish(fresh_db_url: str, tmp_path: Path) -> None:
    key = await admin_key(fresh_db_url, HMAC_SECRET)
    headers = {"X-API-Key": key}
    env = base_env(
        fresh_db_url, tmp_path, LOG_LEVEL="info", SHUTDOWN_TIMEOUT_SECONDS="30",
        SERVICE_ENCRYPTION_KEY=base64.b64encode(os.urandom(32)).decode(),
    )  # fmt: skip
    service = ServiceProcess({"PATH": os.environ.get("PATH", ""), **env}, tmp_path, cwd=REPO_ROOT)
    holder = await asyncpg.connect(fresh_db_url)
    try:
        await asyncio.to_thread(service.wait_ready)
        _, tenant = await asyncio.to_thread(
            _request, f"{service.url}/api/v1/tenants", "POST", headers,
            {"name": "Slow", "slug": "slow"},
        )  # fmt: skip

        # Hold the tenant's row: a config write, which locks it FOR SHARE, now waits.
        transaction = holder.transaction()
        await transaction.start()
        await holder.execute("SELECT id FROM tenants WHERE id = $1 FOR UPDATE", tenant["id"])
        answer: dict[str, Any] = {}
        url = f"{service.url}/api/v1/tenants/{tenant['id']}/config/plan"

        def slow_request() -> None:
            try:
                answer["result"] = _request(url, "PUT", headers, {"value": "gold"})
            except Exception as exc:  # reported by the assertion below
                answer["error"] = exc

        worker = threading.Thread(target=slow_request)
        worker.start()

        async def request_is_waiting() -> bool:
            waiting = await holder.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = 'tenant-service' AND wait_event_type = 'Lock'"
            )
            return bool(waiting)

        await _until(request_is_waiting, "the request to wait for the lock")
        service.proc.send_signal(signal.SIGTERM)

        async def stopping() -> bool:
            return '"service stopping"' in service.output()

        await _until(stopping, "the service to take the signal")

        async def closed() -> bool:
            return _refuses_connections(service.port)

        await _until(closed, "the listener to close")
        assert service.proc.poll() is None, "the process waits for the request in flight"
        assert worker.is_alive()

        await transaction.rollback()  # the request may go on now
        await asyncio.to_thread(worker.join, WAIT_SECONDS)
        assert answer.get("error") is None, answer
        status, entry = answer["result"]
        assert (status, entry["key"], entry["value"]) == (201, "plan", "gold")
        code = await asyncio.to_thread(service.proc.wait, WAIT_SECONDS)
        assert code == 0, service.output()
        stored = await holder.fetchval(
            "SELECT value FROM config_entries WHERE tenant_id = $1 AND key = 'plan'", tenant["id"]
        )
        assert json.loads(stored) == "gold"
    finally:
        await holder.close()
        service.stop()

    lines = [json.loads(line) for line in service.output().splitlines() if line.startswith("{")]
    events = [line["event"] for line in lines]
    for expected in ("service started", "service stopping", "database closed", "service stopped"):
        assert expected in events, (expected, events)
    assert events.index("service stopping") < events.index("database closed")
    (put,) = [line for line in lines if line.get("method") == "PUT"]
    assert events.index("service stopping") < lines.index(put), "answered after the signal"
    assert put["status"] == 201
    assert put["route"] == "/api/v1/tenants/{id}/config/{key}"
