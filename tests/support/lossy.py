"""A loopback proxy that forwards requests but loses every answer: the server does the
work and answers, the client sees its connection drop (a lost response)."""

from __future__ import annotations

import asyncio
import contextlib


class LossyProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.answered = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task

    async def wait_answered(self, count: int) -> None:
        async with asyncio.timeout(30):
            while self.answered < count:
                self._changed.clear()
                await self._changed.wait()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        forward = asyncio.create_task(self._forward(reader, up_writer))
        self._tasks.add(forward)
        forward.add_done_callback(self._tasks.discard)
        try:
            # The first bytes of the answer mean the server finished the request: drop
            # them and the client's connection.
            await up_reader.read(1)
            self.answered += 1
            self._changed.set()
        finally:
            writer.transport.abort()
            up_writer.close()
            forward.cancel()

    async def _forward(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
