"""Servers that misbehave on purpose: one that never answers, a proxy that goes silent,
a proxy that resets."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

from tests.support.tcp_proxy import TcpProxy


class Blackhole:
    """A server that accepts connections and never answers (a hung Redis)."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        while await reader.read(4096):
            pass

    async def stop(self) -> None:
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


class FreezingProxy(TcpProxy):
    """A proxy that can stop passing bytes while keeping every connection open: the
    database goes silent (a partition), nothing is closed or refused."""

    def __init__(self, opener: Any) -> None:
        super().__init__(opener=opener)
        self.flowing = asyncio.Event()
        self.flowing.set()

    async def _pipe(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                await self.flowing.wait()
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            sink.close()
            self._writers.discard(sink)


class ResettingProxy(TcpProxy):
    """A proxy that can answer every connection, open or new, with a TCP reset: a
    database server dying under its clients, as during a failover."""

    def __init__(self, opener: Any) -> None:
        super().__init__(opener=opener)
        self.resetting = False

    def reset_everything(self) -> None:
        self.resetting = True
        for writer in list(self._writers):
            _reset(writer)
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.resetting:
            await reader.read(4096)  # the client's startup message, then the reset
            _reset(writer)
            return
        await super()._accept(reader, writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        # Linger on, timeout zero: close() sends RST instead of FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class InjectingProxy(TcpProxy):
    """A proxy that can write a PostgreSQL ErrorResponse to every client connection while
    it is idle and keep it open: what PgBouncer does to its idle clients when their
    server goes away in a switchover, before it closes them."""

    def __init__(self, opener: Any) -> None:
        super().__init__(opener=opener)
        self.clients: set[asyncio.StreamWriter] = set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients.add(writer)
        await super()._accept(reader, writer)

    def inject_error(self, message: str = "server conn crashed?") -> int:
        """Write a FATAL ErrorResponse to each open client connection; how many."""
        fields = b"SFATAL\0VFATAL\0C08P01\0M" + message.encode() + b"\0\0"
        packet = b"E" + struct.pack("!I", len(fields) + 4) + fields
        sent = 0
        for writer in list(self.clients):
            if writer.is_closing():
                self.clients.discard(writer)
                continue
            writer.write(packet)
            sent += 1
        return sent
