"""Deadlines for reading a request: its headers within HEADER_TIMEOUT_SECONDS, its body
within BODY_TIMEOUT_SECONDS of the headers, or the connection is closed.

aiohttp has no such setting: its keep-alive timer (3630 s by default, and it must outlast
a load balancer's idle timeout) is the only bound on a client that opens a connection and
trickles a request line or a body a byte at a time, holding a connection and its memory
per socket (slowloris). `TimedRequestHandler` is aiohttp's connection protocol with two
clocks:
- the header clock starts when the connection opens (or, on a kept-alive connection,
  with the first byte of the next request, including bytes that follow a bodiless
  request in the same read) and stops when the parser has the whole head of a request;
- the body clock starts then, unless the request has no body, and stops when the parser
  has the whole body.
A request only notes the loop's time: no timer is armed and cancelled per request. One
sweep per site (`Deadlines`), every quarter of the shorter deadline, closes the
connections whose clock has run out, so a connection is closed between its deadline
and a quarter of it later. A handler still reading the body sees the connection reset.
Both rely on attributes of aiohttp's RequestHandler (`_request_count`, `_messages`);
tests/test_hostile_connections.py fails if an aiohttp upgrade changes them.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aiohttp import web
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader

from service.base.tasks import cancel_and_wait
from service.observability.logs import get_logger

log = get_logger("service.http.deadlines")


class Deadlines:
    """The open connections of a site and the sweep that enforces their deadlines."""

    def __init__(self, header_timeout: float, body_timeout: float) -> None:
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.interval = min(header_timeout, body_timeout) / 4
        self.connections: set[TimedRequestHandler] = set()
        self._sweeper: asyncio.Task[None] | None = None

    def opened(self, connection: TimedRequestHandler) -> None:
        self.connections.add(connection)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(
                self._sweep(), name="request-deadlines"
            )

    def closed(self, connection: TimedRequestHandler) -> None:
        self.connections.discard(connection)

    async def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        while self.connections:  # none open: no wake-ups (the next one starts it again)
            await asyncio.sleep(self.interval)
            now = loop.time()
            for connection in list(self.connections):
                connection.check(now)

    async def stop(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        await cancel_and_wait(sweeper)


class TimedRequestHandler(web.RequestHandler):
    """aiohttp's connection protocol with a header and a body deadline."""

    def __init__(self, server: web.Server, *, deadlines: Deadlines, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.deadlines = deadlines
        # Loop time when the current head (body) began to arrive; None: not waiting.
        self._head_since: float | None = None
        self._body_since: float | None = None
        self._body: StreamReader | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._head_since = self._loop.time()
        self.deadlines.opened(self)

    def data_received(self, data: bytes) -> None:
        if self._head_since is None and self._body is None:
            self._head_since = self._loop.time()  # the first byte of the next request
        before = self._request_count
        super().data_received(data)
        if self._request_count != before:
            self._head_since = None
            payload = self._messages[-1][1] if self._messages else None
            if isinstance(payload, StreamReader) and not payload.is_eof():
                self._body = payload
                self._body_since = self._loop.time()
            elif payload is EMPTY_PAYLOAD and not data.endswith(b"\r\n\r\n"):
                # A bodiless request followed by the start of the next one in the same
                # read (pipelining): that next head has begun, so its deadline runs.
                self._head_since = self._loop.time()
        if self._body is not None and self._body.is_eof():
            self._body = self._body_since = None

    def connection_lost(self, exc: BaseException | None) -> None:
        self._head_since = self._body_since = self._body = None
        self.deadlines.closed(self)
        super().connection_lost(exc)

    def check(self, now: float) -> None:
        """Close the connection if a clock has run out (the sweep calls this)."""
        deadlines = self.deadlines
        if self._head_since is not None and now - self._head_since >= deadlines.header_timeout:
            if getattr(self, "_request_in_progress", False):
                # A pipelined head waits behind a request still being answered: its time
                # starts again once the connection could read it.
                self._head_since = now
                return
            self._head_since = None
            log.info(
                "connection closed: request headers incomplete", timeout=deadlines.header_timeout
            )
            self.force_close()
        elif self._body_since is not None and now - self._body_since >= deadlines.body_timeout:
            self._body_since = self._body = None
            log.info("connection closed: request body incomplete", timeout=deadlines.body_timeout)
            self.force_close()


class TimedSite(web.TCPSite):
    """TCPSite whose connections are TimedRequestHandlers."""

    def __init__(
        self,
        runner: web.AppRunner,
        host: str,
        port: int,
        *,
        header_timeout: float,
        body_timeout: float,
        reuse_port: bool = False,
        sock: socket.socket | None = None,
    ) -> None:
        super().__init__(runner, host, port, reuse_port=reuse_port)
        self.deadlines = Deadlines(header_timeout, body_timeout)
        # A socket already bound (and listening): the server binds before it starts.
        self.sock = sock

    async def start(self) -> None:
        self._runner._reg_site(self)  # what BaseSite.start does
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        options: dict[str, Any] = dict(server._kwargs)

        def protocol() -> TimedRequestHandler:
            return TimedRequestHandler(server, loop=loop, deadlines=self.deadlines, **options)

        if self.sock is not None:
            self._server = await loop.create_server(protocol, sock=self.sock, backlog=self._backlog)
            return
        self._server = await loop.create_server(
            protocol,
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )

    async def stop(self) -> None:
        await self.deadlines.stop()
        await super().stop()
