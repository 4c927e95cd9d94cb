"""API-key lookups cached by key hash, so authentication costs no database round trip
on the hot path.

The cache is only trusted while the change listener (service.auth.key_listener) is
connected: every change that matters to authentication is announced by a trigger, and
the listener drops the cached copy. While the listener is down the cache is off and
every request looks its key up, so a missed announcement can never keep a revoked key
alive. The process making a change drops its own copy at once, without waiting for the
announcement.

A lookup that was running while its key was dropped may have read the old row, so a
lookup is not cached when its key (or its role, or everything) was dropped since it
started; drops of other keys do not matter. Each drop bumps the generation and is
remembered for a while, which is how put() tells the two apart.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from dataclasses import dataclass
from uuid import UUID

from service.caches.listened import ListenedCache
from service.repositories.api_keys import KeyCredentials

MAX_ENTRIES = 10_000
# A safety net only: announcements keep entries fresh long before this.
MAX_AGE_SECONDS = 300.0
# Drops remembered for lookups in flight; a lookup older than all of them is not cached.
REMEMBERED_DROPS = 1024


@dataclass(frozen=True, slots=True)
class _Entry:
    creds: KeyCredentials
    stored_at: float


class KeyCache(ListenedCache):
    def __init__(self, *, max_entries: int = MAX_ENTRIES, max_age: float = MAX_AGE_SECONDS):
        super().__init__()
        self.max_entries = max_entries
        self.max_age = max_age
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()
        self._hash_by_id: dict[UUID, bytes] = {}
        # (generation, "key" | "role" | "all", id) of recent drops, oldest first.
        self._drops: deque[tuple[int, str, UUID | None]] = deque(maxlen=REMEMBERED_DROPS)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key_hash: bytes) -> KeyCredentials | None:
        if not self._enabled:
            return None
        entry = self._entries.get(key_hash)
        if entry is None:
            return None
        if time.monotonic() - entry.stored_at > self.max_age:
            self._drop(key_hash)
            return None
        self._entries.move_to_end(key_hash)
        return entry.creds

    def put(self, key_hash: bytes, creds: KeyCredentials, generation: int) -> None:
        """Cache a lookup that started at `generation`, unless it may be stale."""
        if not self._enabled or self._dropped_since(generation, creds):
            return
        self._entries[key_hash] = _Entry(creds, time.monotonic())
        self._entries.move_to_end(key_hash)
        self._hash_by_id[creds.id] = key_hash
        while len(self._entries) > self.max_entries:
            _, entry = self._entries.popitem(last=False)
            self._hash_by_id.pop(entry.creds.id, None)

    def invalidate_key(self, key_id: UUID) -> None:
        self._record_drop("key", key_id)
        key_hash = self._hash_by_id.pop(key_id, None)
        if key_hash is not None:
            self._entries.pop(key_hash, None)

    def invalidate_role(self, role_id: UUID) -> None:
        self._record_drop("role", role_id)
        for key_hash in [h for h, e in self._entries.items() if e.creds.role_id == role_id]:
            self._drop(key_hash)

    def clear(self) -> None:
        self._record_drop("all", None)
        self._entries.clear()
        self._hash_by_id.clear()

    def enable(self) -> None:
        """The listener is connected: start caching from an empty cache."""
        self.clear()
        self._enabled = True

    def disable(self) -> None:
        """The listener is gone: announcements may be missed, so stop trusting entries."""
        self._enabled = False
        self.clear()

    def _drop(self, key_hash: bytes) -> None:
        entry = self._entries.pop(key_hash, None)
        if entry is not None:
            self._hash_by_id.pop(entry.creds.id, None)

    def _record_drop(self, kind: str, target: UUID | None) -> None:
        self._generation += 1
        self._drops.append((self._generation, kind, target))

    def _dropped_since(self, generation: int, creds: KeyCredentials) -> bool:
        if generation == self._generation:
            return False
        if not self._drops or self._drops[0][0] > generation + 1:
            return True  # some drops since then are forgotten: assume the worst
        for at, kind, target in self._drops:
            if at <= generation:
                continue
            if kind == "all" or (kind == "key" and target == creds.id):
                return True
            if kind == "role" and target is not None and target == creds.role_id:
                return True
        return False
