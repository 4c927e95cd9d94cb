"""A small Server-Sent Events parser (the WHATWG event-stream rules), fed line by line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Event:
    event: str
    data: str
    id: str | None


class Parser:
    """Feed it lines without their line ending; it answers an Event when a blank line
    ends one. Comment lines (heartbeats) are counted and kept in `last_comment`."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry_ms: int | None = None
        self.comments = 0
        self.last_comment = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            self.last_comment = line[1:].strip()
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        event, data = self._event or "message", self._data
        self._event, self._data = "", []
        if not data:
            return None
        return Event(event=event, data="\n".join(data), id=self.last_id)
