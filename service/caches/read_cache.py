"""Rendered tenant documents and contexts cached per process, so the hottest reads of
the service (a SaaS back end asks for a tenant and its context on every request) cost
no database work.

Freshness (docs/decisions.md, "Scoped read-cache invalidation"):
- Entries are only trusted while the change listener is connected. Migration 0020's
  triggers announce every committed change to tenants, config entries and permission
  policies on the channel tenant_service_tenant_data, saying which tenants changed and
  how (service/caches/announcements.py). Every process drops what the change can alter:
  a tenant's own documents, the contexts below a tenant whose entries changed, or a
  whole subtree that moved. Everything else stays cached. A change is seen everywhere
  within the listener's delivery time; while the listener is down the cache is off.
- A writing request waits, before its answer leaves, until this process has heard the
  announcements of its own commits (service/http/freshness.py), so a client reads its
  own writes.
- A read that was running while a change touching it was announced may have seen the
  old rows: put() refuses it. Changes are numbered (the generation) and the recent ones
  kept, so a read is refused only when a change since it started touches its tenant.

Each entry is indexed under every id of its ancestry path (the path it was read with:
after a move that is the old one, and the moved subtree's top lies on both), so "this
tenant and everything below it" is one lookup. Only masked documents are cached;
?reveal=true always reads the database. Each entry keeps the tenant's path and status,
so the caller's access is checked on every request, cached or not.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from service.caches.announcements import EVERYTHING, Change, Kind, Marker, parse, path_ids
from service.etags import Rendered

DEFAULT_MAX_ENTRIES = 20_000
# Changes remembered for reads in flight; a read older than all of them is not cached.
RECENT_CHANGES = 1024
Key = tuple[Kind, UUID]


class Placed(Protocol):
    """What an access check needs of a tenant (tenant_access.visible / active)."""

    @property
    def ancestry_path(self) -> str: ...

    @property
    def status(self) -> str: ...


@dataclass(frozen=True, slots=True)
class CachedRead:
    node: Placed  # position and status, for the caller's access check
    rendered: Rendered


class ReadCache:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[Key, CachedRead] = OrderedDict()
        # Ancestor id -> the entries whose path holds it (their own id included), so
        # "this tenant and everything below it" is a dictionary lookup.
        self._below: dict[str, set[Key]] = {}
        self._generation = 0
        # The most recent changes, numbered by the generation they started.
        self._changes: deque[tuple[int, Change]] = deque(maxlen=RECENT_CHANGES)
        self._markers: dict[str, asyncio.Future[None]] = {}
        self._enabled = False

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def generation(self) -> int:
        """Take this before reading the database and hand it to put()."""
        return self._generation

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, kind: Kind, tenant_id: UUID) -> CachedRead | None:
        if not self._enabled:
            return None
        entry = self._entries.get((kind, tenant_id))
        if entry is not None:
            self._entries.move_to_end((kind, tenant_id))
        return entry

    def put(self, kind: Kind, tenant_id: UUID, entry: CachedRead, generation: int) -> None:
        """Cache a read that started at `generation`, unless a change announced since
        then may have altered it (its row may predate the change)."""
        if not self._enabled:
            return
        ids = path_ids(entry.node.ancestry_path)
        if generation != self._generation and self._overtaken(kind, tenant_id, ids, generation):
            return
        key = (kind, tenant_id)
        self._drop(key)
        self._entries[key] = entry
        for ancestor in ids:
            self._below.setdefault(ancestor, set()).add(key)
        while len(self._entries) > self.max_entries:
            self._drop(next(iter(self._entries)))

    def _overtaken(self, kind: Kind, tenant_id: UUID, ids: list[str], generation: int) -> bool:
        if not self._changes or self._changes[0][0] > generation + 1:
            return True  # the changes since `generation` are no longer all known
        own = str(tenant_id)
        return any(
            number > generation and change.touches(kind, own, ids)
            for number, change in self._changes
        )

    def _drop(self, key: Key) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        for ancestor in path_ids(entry.node.ancestry_path):
            keys = self._below.get(ancestor)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._below[ancestor]

    def invalidate(self, change: Change) -> None:
        """Drop what a change may have altered; reads running now will not be cached
        if it touches them."""
        self._generation += 1
        self._changes.append((self._generation, change))
        if change.everything:
            self._entries.clear()
            self._below.clear()
            return
        for raw in change.own:
            tenant_id = UUID(raw)
            self._drop(("tenant", tenant_id))
            self._drop(("context", tenant_id))
        for raw in change.entries:
            self._drop(("tenant", UUID(raw)))
            for key in list(self._below.get(raw, ())):
                if key[0] == "context":
                    self._drop(key)
        for raw in change.subtree:
            for key in list(self._below.get(raw, ())):
                self._drop(key)

    def clear(self) -> None:
        self.invalidate(EVERYTHING)

    def announced(self, payload: str) -> None:
        """The listener heard an announcement (in commit order)."""
        heard = parse(payload)
        if isinstance(heard, Marker):
            waiter = self._markers.pop(heard.token, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        else:
            self.invalidate(heard)

    def expect(self, token: str) -> asyncio.Future[None]:
        """A future done once the marker `token` is heard (or the cache turns off)."""
        waiter = asyncio.get_running_loop().create_future()
        self._markers[token] = waiter
        return waiter

    def forget(self, token: str) -> None:
        self._markers.pop(token, None)

    def enable(self) -> None:
        """The listener is connected: start caching from an empty cache."""
        self.clear()
        self._enabled = self.max_entries > 0

    def disable(self) -> None:
        """The listener is gone: announcements may be missed, so stop trusting entries.
        Nobody waits for a marker any more: with the cache off there is nothing to drop."""
        self._enabled = False
        self.clear()
        markers, self._markers = self._markers, {}
        for waiter in markers.values():
            if not waiter.done():
                waiter.set_result(None)
