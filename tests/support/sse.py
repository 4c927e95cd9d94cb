"""Reading Server-Sent Events from a streamed answer, with bounded waits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import ClientResponse


@dataclass
class Event:
    name: str
    id: str | None
    data: Any


@dataclass
class EventReader:
    response: ClientResponse
    comments: list[str] = field(default_factory=list)
    ended: bool = False

    async def next(self, seconds: float = 10.0) -> Event | None:
        """The next event (comments are collected on the way), None at the end."""
        async with asyncio.timeout(seconds):
            name, event_id, data = "message", None, []
            while True:
                raw = await self.response.content.readline()
                if not raw:
                    self.ended = True
                    return None
                line = raw.decode().rstrip("\n")
                if line == "":
                    if data:
                        return Event(name, event_id, orjson.loads("\n".join(data)))
                    continue
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
                    continue
                key, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if key == "event":
                    name = value
                elif key == "id":
                    event_id = value
                elif key == "data":
                    data.append(value)

    async def until(self, done: Callable[[Event], bool], seconds: float = 15.0) -> list[Event]:
        """Every event up to and including the first for which done() holds."""
        events: list[Event] = []
        async with asyncio.timeout(seconds):
            while True:
                event = await self.next(seconds)
                assert event is not None, f"the stream ended after {events}"
                events.append(event)
                if done(event):
                    return events

    async def comment(self, seconds: float = 10.0) -> str:
        """Wait for the next comment line."""
        seen = len(self.comments)
        async with asyncio.timeout(seconds):
            while len(self.comments) == seen:
                raw = await self.response.content.readline()
                assert raw, "the stream ended"
                line = raw.decode().rstrip("\n")
                if line.startswith(":"):
                    self.comments.append(line[1:].strip())
        return self.comments[-1]

    def close(self) -> None:
        self.response.close()


async def open_stream(
    client: Any, tenant_id: str, headers: dict[str, str], *, expect: int = 200, **params: Any
) -> EventReader:
    resp = await client.get(
        f"/api/v1/tenants/{tenant_id}/context-changes", headers=headers, params=params
    )
    assert resp.status == expect, await resp.text()
    if expect == 200:
        assert resp.headers["Content-Type"].startswith("text/event-stream")
    return EventReader(resp)
