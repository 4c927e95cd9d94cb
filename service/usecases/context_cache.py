"""Rendered tenant contexts cached per process, so the hottest read of the service (a
SaaS back end asks for a tenant's context on every request) costs no database work.

Freshness follows the key cache's rules (service/auth/key_cache.py):
- Entries are only trusted while the change listener is connected. Migration 0011's
  triggers announce every committed change to tenants, config entries and permission
  policies on the channel tenant_service_context; each announcement empties the cache of
  every process, so a change made anywhere is seen everywhere within the listener's
  delivery time (milliseconds; well under a second). While the listener is down the
  cache is off.
- The process that made a change empties its own cache as the request ends, before
  the answer leaves (service/http/freshness.py), so a client reads its own writes.
- A resolution that was running while the cache was emptied may have read the old rows:
  put() refuses it (the generation moved on).

Invalidation is deliberately coarse (any change empties everything): one change can
alter the context of a whole subtree, and clearing is cheaper than working out which
cached tenants lie below it. Only masked documents are cached; ?reveal=true always reads
the database.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from uuid import UUID

from service.repositories.context import ResolvedContext

DEFAULT_MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class RenderedContext:
    """A context document as the API answers it: JSON bytes and their ETag."""

    body: bytes
    etag: str


@dataclass(frozen=True, slots=True)
class CachedContext:
    resolved: ResolvedContext  # position and status, for the caller's access check
    rendered: RenderedContext


class ContextCache:
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[UUID, CachedContext] = OrderedDict()
        self._generation = 0
        self._enabled = False

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def generation(self) -> int:
        """Take this before resolving and hand it to put()."""
        return self._generation

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, tenant_id: UUID) -> CachedContext | None:
        if not self._enabled:
            return None
        entry = self._entries.get(tenant_id)
        if entry is not None:
            self._entries.move_to_end(tenant_id)
        return entry

    def put(self, tenant_id: UUID, entry: CachedContext, generation: int) -> None:
        """Cache a resolution that started at `generation`, unless it may be stale."""
        if not self._enabled or generation != self._generation:
            return
        self._entries[tenant_id] = entry
        self._entries.move_to_end(tenant_id)
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
