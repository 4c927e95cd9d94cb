"""A loopback TCP proxy that can be cut and restored, to stage an outage of a server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

Opener = Callable[[], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


def postgres_opener(dsn: str) -> Opener:
    """How to reach the server of a PostgreSQL URL (TCP, or a Unix socket via ?host=/dir)."""
    parts = urlsplit(dsn)
    query = parse_qs(parts.query)
    port = parts.port or int(query.get("port", ["5432"])[0])
    socket_dir = query.get("host", [""])[0]
    if socket_dir.startswith("/"):
        path = f"{socket_dir}/.s.PGSQL.{port}"
        return lambda: asyncio.open_unix_connection(path)
    host = parts.hostname or "127.0.0.1"
    return lambda: asyncio.open_connection(host, port)


class TcpProxy:
    def __init__(
        self, target_host: str = "", target_port: int = 0, *, opener: Opener | None = None
    ):
        self.open_upstream: Opener = opener or (
            lambda: asyncio.open_connection(target_host, target_port)
        )
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port the first time, the same one afterwards)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Refuse new connections and cut every open one."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await self.open_upstream()
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        for source, sink in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(source, sink))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            sink.close()
            self._writers.discard(sink)
