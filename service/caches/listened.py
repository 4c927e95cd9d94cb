"""What the key cache and the read cache share: each is trusted only while its change
listener is connected (enabled), and each numbers the changes it hears (the generation),
so that a read which began before a change touching it is not cached after it."""

from __future__ import annotations


class ListenedCache:
    def __init__(self) -> None:
        self._generation = 0
        self._enabled = False

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def generation(self) -> int:
        """Take this before reading and hand it to put()."""
        return self._generation
