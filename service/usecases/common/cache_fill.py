"""The database read that fills the read cache: a replica may answer it, but never with
a document older than a change this process has heard (docs/scaling.md, "Caches").

The replica's read comes with the position it had replayed before the read's snapshot.
When a heard change touching the tenant lies past that position, or the replica did not
find the tenant (it may not have replayed its creation, which is not announced), the
primary answers instead and its answer is the one served and cached. So a lagging
replica costs a second read of the few tenants that changed, never a stale answer;
while the primary cannot be reached, the replica's answer stands.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar
from uuid import UUID

import asyncpg

from service.caches.announcements import Kind
from service.caches.read_cache import ReadCache
from service.db.pool import Database


class _Placed(Protocol):
    @property
    def ancestry_path(self) -> str: ...


P = TypeVar("P", bound=_Placed)


async def fill_read(
    db: Database,
    cache: ReadCache,
    kind: Kind,
    tenant_id: UUID,
    fn: Callable[[asyncpg.Connection], Awaitable[P | None]],
) -> tuple[P | None, int | None]:
    """fn's answer and the position to hand to ReadCache.put (None: the primary's)."""
    found, replayed = await db.read_replayed(fn)
    if replayed is None:
        return found, None
    path = None if found is None else found.ancestry_path
    if found is None or cache.behind(kind, tenant_id, path, replayed):
        answered = await db.primary_unless_down(fn)
        if answered is not None:
            return answered[0], None
        # The primary is down, so nothing is being changed: the replica's answer is as
        # fresh as its lag (a read without a token may be that old).
    return found, replayed
