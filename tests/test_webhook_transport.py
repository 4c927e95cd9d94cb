"""The HTTP client's limits, seen through the test endpoint: the per-attempt timeout,
at most 64 KiB of a response read, proxy variables ignored, no cookies kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from service.settings.options import Settings
from tests.conftest import base_env

TIMEOUT = 0.5


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(
            db_url,
            tmp_path,
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_TIMEOUT_SECONDS=str(TIMEOUT),
            WEBHOOK_CONCURRENCY="0",
        )
    )


class Target:
    """A receiver whose handler a test replaces; counts requests and cookies seen."""

    def __init__(self) -> None:
        self.handler: Any = None
        self.requests = 0
        self.cookies: list[str] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.cookies.append(request.headers.get("Cookie", ""))
        await request.read()
        response: web.StreamResponse = await self.handler(request)
        return response

    async def start(self) -> Target:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    started = await Target().start()
    yield started
    assert started.runner is not None
    await started.runner.cleanup()


async def call_test_endpoint(client: Any, admin: dict[str, str], port: int) -> dict[str, Any]:
    resp = await client.post(
        "/api/v1/webhooks",
        json={"url": f"http://127.0.0.1:{port}/hook", "events": ["tenant.created"]},
        headers=admin,
    )
    hook = await resp.json()
    assert resp.status == 201, hook
    resp = await client.post(f"/api/v1/webhooks/{hook['id']}/test", headers=admin)
    body: dict[str, Any] = await resp.json()
    assert resp.status == 200, body
    return body


async def test_a_slow_target_times_out(client, admin, target):
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(TIMEOUT * 3)
        return web.Response(text="late")

    target.handler = slow
    result = await call_test_endpoint(client, admin, target.port)
    assert (result["success"], result["response_code"]) == (False, 0)
    assert result["error"] == f"timed out after {TIMEOUT:g} s"


async def test_an_endless_answer_is_read_to_64_kib_only(client, admin, target):
    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=200)
        await response.prepare(request)
        chunk = b"x" * 16384
        try:
            for _ in range(1000):  # 16 MB over 10 s, unless the client hangs up
                await response.write(chunk)
                await asyncio.sleep(0.01)
        except (ConnectionError, asyncio.CancelledError):
            pass
        return response

    target.handler = endless
    result = await call_test_endpoint(client, admin, target.port)
    # All of it would take 10 s, far past the timeout: the client stopped at 64 KiB.
    assert (result["success"], result["response_code"]) == (True, 200)


async def test_proxy_variables_are_ignored_and_no_cookies_kept(client, admin, target, monkeypatch):
    proxy_hits = 0

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal proxy_hits
        proxy_hits += 1
        writer.close()

    proxy_server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    proxy_url = f"http://127.0.0.1:{proxy_server.sockets[0].getsockname()[1]}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, proxy_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    async def set_cookie(request: web.Request) -> web.Response:
        response = web.Response(text="ok")
        response.set_cookie("session", "from-the-target")
        return response

    target.handler = set_cookie
    try:
        first = await call_test_endpoint(client, admin, target.port)
        second = await call_test_endpoint(client, admin, target.port)
    finally:
        proxy_server.close()
        await proxy_server.wait_closed()
    assert first["success"]
    assert second["success"]
    assert proxy_hits == 0
    assert target.requests == 2
    assert target.cookies == ["", ""]
