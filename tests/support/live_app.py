"""The app on a loop of its own in a background thread, for tests driven synchronously
(hypothesis state machines): HTTP calls and database reads submitted from the test's
thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import aiohttp
import asyncpg
from aiohttp import web

from service.app import create_app
from service.db.pool import connect
from service.settings.options import Settings
from tests.support.keys import key_headers

T = TypeVar("T")


class LiveApp:
    """The app on 127.0.0.1 (a free port), driven from the test's thread."""

    def __init__(self, settings: Settings) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.settings = settings
        self.runner: web.AppRunner | None = None
        self.session: aiohttp.ClientSession | None = None
        self.conn: asyncpg.Connection | None = None
        self.base = ""
        self.headers: dict[str, str] = {}
        self.run(self._start())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    async def _start(self) -> None:
        app = create_app(self.settings)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.base = f"http://127.0.0.1:{port}"
        self.session = aiohttp.ClientSession()
        self.headers = await key_headers(app)
        assert self.settings.database_url is not None
        self.conn = await connect(self.settings.database_url)

    async def _stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        if self.conn is not None:
            await self.conn.close()
        if self.runner is not None:
            await self.runner.cleanup()

    def close(self) -> None:
        try:
            self.run(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()

    async def _call(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        assert self.session is not None
        async with self.session.request(
            method, self.base + path, json=body, headers=self.headers
        ) as resp:
            data = await resp.json() if resp.status != 204 else None
            return resp.status, data

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        status, data = self.run(self._call(method, path, body))
        assert status < 500, (method, path, body, data)
        return status, data

    def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        assert self.conn is not None
        return self.run(self.conn.fetch(sql, *args))
