"""Deadlines for reading a request: its headers within HEADER_TIMEOUT_SECONDS, its body
within BODY_TIMEOUT_SECONDS of the headers, or the connection is closed.

aiohttp has no such setting: its keep-alive timer (3630 s by default, and it must outlast
a load balancer's idle timeout) is the only bound on a client that opens a connection and
trickles a request line or a body a byte at a time, holding a connection and its memory
per socket (slowloris). `TimedRequestHandler` is aiohttp's connection protocol with two
timers:
- the header timer starts when the connection opens (or, on a kept-alive connection,
  with the first byte of the next request, including bytes that follow a bodiless
  request in the same read) and stops when the parser has the whole head of a request;
- the body timer starts then, unless the request has no body, and stops when the parser
  has the whole body.
When a timer fires the connection is closed; a handler still reading the body sees the
connection reset. Both rely on attributes of aiohttp's RequestHandler (`_request_count`,
`_messages`); tests/test_hostile_connections.py fails if an aiohttp upgrade changes them.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from aiohttp import web
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader

from service.logs import get_logger

log = get_logger("service.http.deadlines")


class TimedRequestHandler(web.RequestHandler):
    """aiohttp's connection protocol with a header and a body deadline."""

    def __init__(
        self, server: web.Server, *, header_timeout: float, body_timeout: float, **kwargs: Any
    ) -> None:
        super().__init__(server, **kwargs)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body: StreamReader | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm_headers()

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self._body is None:
            self._arm_headers()  # the first byte of the next request on this connection
        before = self._request_count
        super().data_received(data)
        if self._request_count != before:
            self._cancel_headers()
            payload = self._messages[-1][1] if self._messages else None
            if isinstance(payload, StreamReader) and not payload.is_eof():
                self._body = payload
                self._body_timer = self._loop.call_later(self.body_timeout, self._body_late)
            elif payload is EMPTY_PAYLOAD and not data.endswith(b"\r\n\r\n"):
                # A bodiless request followed by the start of the next one in the same
                # read (pipelining): that next head has begun, so its deadline runs.
                self._arm_headers()
        if self._body is not None and self._body.is_eof():
            self._cancel_body()

    def connection_lost(self, exc: BaseException | None) -> None:
        self._cancel_headers()
        self._cancel_body()
        super().connection_lost(exc)

    def _arm_headers(self) -> None:
        self._header_timer = self._loop.call_later(self.header_timeout, self._headers_late)

    def _cancel_headers(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _cancel_body(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        self._body = None

    def _headers_late(self) -> None:
        self._header_timer = None
        if getattr(self, "_request_in_progress", False):
            # A pipelined head waits behind a request still being answered: its time
            # starts again once the connection could read it.
            self._arm_headers()
            return
        log.info("connection closed: request headers incomplete", timeout=self.header_timeout)
        self.force_close()

    def _body_late(self) -> None:
        self._body_timer = None
        self._body = None
        log.info("connection closed: request body incomplete", timeout=self.body_timeout)
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
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        # A socket already bound (and listening): the server binds before it starts.
        self.sock = sock

    async def start(self) -> None:
        self._runner._reg_site(self)  # what BaseSite.start does
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        options: dict[str, Any] = dict(server._kwargs)

        def protocol() -> TimedRequestHandler:
            return TimedRequestHandler(
                server,
                loop=loop,
                header_timeout=self.header_timeout,
                body_timeout=self.body_timeout,
                **options,
            )

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
