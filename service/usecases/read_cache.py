"""Rendered tenant documents and contexts cached per process, so the hottest reads of
the service (a SaaS back end asks for a tenant and its context on every request) cost
no database work.

Freshness follows the key cache's rules (service/auth/key_cache.py):
- Entries are only trusted while the change listener is connected. Migration 0015's
  triggers announce every committed change to tenants, config entries and permission
  policies on the channel tenant_service_tenant_data; each announcement empties the
  cache of every process, so a change made anywhere is seen everywhere within the
  listener's delivery time (milliseconds; well under a second). While the listener is
  down the cache is off.
- The process that made a change empties its own cache as the request ends, before
  the answer leaves (service/http/freshness.py), so a client reads its own writes.
- A read that was running while the cache was emptied may have seen the old rows:
  put() refuses it (the generation moved on).

Invalidation is deliberately coarse (any change empties everything): one change can
alter the contexts of a whole subtree, and clearing is cheaper than working out which
cached tenants lie below it. Only masked documents are cached; ?reveal=true always reads
the database. Each entry keeps the tenant's path and status, so the caller's access is
checked on every request, cached or not.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from uuid import UUID

import orjson

from service.representations import etag_of

DEFAULT_MAX_ENTRIES = 20_000
Kind = Literal["tenant", "context"]


class Placed(Protocol):
    """What an access check needs of a tenant (tenant_access.visible / active)."""

    @property
    def ancestry_path(self) -> str: ...

    @property
    def status(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Rendered:
    """A document as the API answers it: JSON bytes and their ETag."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, document: Any) -> Rendered:
        return cls(orjson.dumps(document), etag_of(document))


@dataclass(frozen=True, slots=True)
class CachedRead:
    node: Placed  # position and status, for the caller's access check
    rendered: Rendered


class ReadCache:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[Kind, UUID], CachedRead] = OrderedDict()
        self._generation = 0
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
        """Cache a read that started at `generation`, unless it may be stale."""
        if not self._enabled or generation != self._generation:
            return
        self._entries[(kind, tenant_id)] = entry
        self._entries.move_to_end((kind, tenant_id))
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._generation += 1
        self._entries.clear()

    def enable(self) -> None:
        """The listener is connected: start caching from an empty cache."""
        self.clear()
        self._enabled = self.max_entries > 0

    def disable(self) -> None:
        """The listener is gone: announcements may be missed, so stop trusting entries."""
        self._enabled = False
        self.clear()
