"""A dedicated connection that LISTENs on channels, kept up by one task: the key change
listener's (service/auth/key_listener.py) and the revision feed's
(service/caches/revision_feed.py).

The connection is watched: a termination callback notices a closed socket at once and a
ping every few seconds notices a silent one. When it cannot connect, or is lost, it
reconnects with a growing pause. What a user does when the connection comes up, fails
to, and goes down is in its hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping

import asyncpg

from service.base.tasks import cancel_and_wait

PING_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 5.0
MAX_PAUSE_SECONDS = 5.0
FIRST_PAUSE_SECONDS = 0.1
CLOSE_TIMEOUT_SECONDS = 2.0

Ping = Callable[[asyncpg.Connection], Awaitable[object]]
# A channel's handler: the notification's payload.
Heard = Callable[[str], None]


class ListeningConnection:
    def __init__(
        self,
        *,
        task_name: str,
        application_name: str,
        ping: Ping,
        ping_timeout: float,
        channels: Mapping[str, Heard],
    ) -> None:
        self.task_name = task_name
        # The channels to LISTEN on, each with its handler.
        self.channels = dict(channels)
        self.application_name = application_name
        self.ping = ping
        self.ping_timeout = ping_timeout
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._conn: asyncpg.Connection | None = None

    async def _came_up(self, conn: asyncpg.Connection) -> None:
        """Work on a new connection before it counts as up (a failure: reconnect)."""

    def _failed(self, exc: Exception) -> None:
        """The connection could not be made (a pause, then another attempt)."""

    def _up(self) -> None:
        """The connection is up and listening."""

    def _down(self) -> None:
        """The connection is no longer watched (lost, or the listener stops)."""

    def _lost(self) -> None:
        """The connection was lost (not stopped) and is closed; a new one follows."""

    async def _start(self, dsn: str, wait_seconds: float) -> None:
        """Start listening; wait briefly for the first connection (the service also
        starts without it)."""
        self._task = asyncio.create_task(self._run(dsn), name=self.task_name)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.connected.wait(), wait_seconds)

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._close()

    async def _run(self, dsn: str) -> None:
        pause = FIRST_PAUSE_SECONDS
        while True:
            lost = asyncio.Event()
            try:
                conn = await self._connect(dsn, lost)
                await self._came_up(conn)
            except Exception as exc:  # any failure to listen: close, pause, retry
                await self._close()
                self._failed(exc)
                await asyncio.sleep(pause)
                pause = min(MAX_PAUSE_SECONDS, pause * 2)
                continue
            pause = FIRST_PAUSE_SECONDS
            self._up()
            self.connected.set()
            try:
                await self._watch(conn, lost)
            finally:
                self._down()
                self.connected.clear()
                await self._close()
            self._lost()

    async def _connect(self, dsn: str, lost: asyncio.Event) -> asyncpg.Connection:
        conn: asyncpg.Connection = await asyncpg.connect(
            dsn,
            timeout=CONNECT_TIMEOUT_SECONDS,
            server_settings={"application_name": self.application_name},
        )
        self._conn = conn
        for channel, heard in self.channels.items():
            await conn.add_listener(channel, _callback(heard))
        conn.add_termination_listener(lambda _conn: lost.set())
        return conn

    async def _watch(self, conn: asyncpg.Connection, lost: asyncio.Event) -> None:
        while not lost.is_set():
            try:
                await asyncio.wait_for(lost.wait(), PING_SECONDS)
            except TimeoutError:
                pass  # quiet for a while: check that the connection still answers
            else:
                return
            try:
                await asyncio.wait_for(self.ping(conn), self.ping_timeout)
            except Exception:  # whatever the failure, a fresh connection is the cure
                return

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), CLOSE_TIMEOUT_SECONDS)
            if not conn.is_closed():
                conn.terminate()


def _callback(heard: Heard) -> Callable[[object, int, str, object], None]:
    """asyncpg's listener signature around a handler of the payload alone."""

    def notified(_conn: object, _pid: int, _channel: str, payload: object) -> None:
        heard(str(payload))

    return notified
