"""Rendered tenant documents and contexts cached per process, so the hottest reads of
the service (a SaaS back end asks for a tenant and its context on every request) cost
no database work.

Freshness (docs/decisions/caching.md):
- Entries are only trusted while the change listener is connected. Migration 0020's
  triggers announce every committed change to tenants, config entries and permission
  policies on the channel tenant_service_tenant_data, saying which tenants changed and
  how (service/caches/announcements.py). Every process drops what the change can alter:
  a tenant's own documents, the contexts below a tenant whose entries changed, or a
  whole subtree that moved. Everything else stays cached. A change is seen everywhere
  within the listener's delivery time; while the listener is down the cache is off.
- A writing request waits, before its answer leaves, until this process has heard the
  announcements of its own commits (service/http/middlewares/freshness.py), so a client reads its
  own writes.
- A read that was running while a change touching it was announced may have seen the
  old rows: put() refuses it. Changes are numbered (the generation) and the recent ones
  kept, so a read is refused only when a change since it started touches its tenant.
- A read from a replica may be older than an announcement already heard (docs/scaling.md,
  "Caches"). Each change records the primary's WAL position sampled after it arrived
  (at or past its commit); a replica read carries the position the replica had
  replayed before its snapshot. behind() says when a change touching the tenant lies
  past that position: the caller then reads the primary instead, and put() refuses such
  a read too. The hot path is two comparisons: a replica that has replayed every
  recorded change needs no scan.

Each entry is indexed under every id of its ancestry path (the path it was read with:
after a move that is the old one, and the moved subtree's top lies on both), so "this
tenant and everything below it" is one lookup. Only masked documents are cached;
?reveal=true always reads the database. Each entry keeps the tenant's path and status,
so the caller's access is checked on every request, cached or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

import asyncpg

from service.base.etags import Rendered
from service.caches.announcements import EVERYTHING, Change, Kind, Marker, parse, path_ids
from service.caches.listened import ListenedCache
from service.db.consistency import required_position

DEFAULT_MAX_ENTRIES = 20_000
# Changes remembered for reads in flight; a read older than all of them is not cached.
RECENT_CHANGES = 1024
# A primary position that could not be sampled is asked for again after this long; until
# then replica reads of what the change touches go to the primary.
RESAMPLE_SECONDS = 0.5
Key = tuple[Kind, UUID]
PositionSource = Callable[[], Awaitable[int | None]]
# The newest committed revision, read on the listener's own connection.
RevisionSource = Callable[[asyncpg.Connection], Awaitable[int]]


class _Recorded:
    """A change heard, numbered by the generation it started, with the primary's WAL
    position sampled after it arrived (None until the sample returns)."""

    __slots__ = ("change", "number", "position")

    def __init__(self, number: int, change: Change) -> None:
        self.number = number
        self.change = change
        self.position: int | None = None


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


class ReadCache(ListenedCache):
    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        super().__init__()
        self.max_entries = max_entries
        self._entries: OrderedDict[Key, CachedRead] = OrderedDict()
        # Ancestor id -> the entries whose path holds it (their own id included), so
        # "this tenant and everything below it" is a dictionary lookup.
        self._below: dict[str, set[Key]] = {}
        # The most recent changes, numbered by the generation they started.
        self._changes: deque[_Recorded] = deque(maxlen=RECENT_CHANGES)
        self._markers: dict[str, asyncio.Future[None]] = {}
        # Primary positions: every change numbered up to _positioned_through has one;
        # _highest is the highest of them, forgotten changes included, and _forgotten
        # the highest of the changes that fell out of _changes (_forgotten_through their
        # newest number): a replica read behind it may miss any of them.
        self._positioned_through = 0
        self._highest = 0
        self._forgotten = 0
        self._forgotten_through = 0
        self._source: PositionSource | None = None
        self._sampler: asyncio.Task[None] | None = None
        # The newest revision committed as far as this process knows: heard on the
        # listener's connection after the announcements of its commit and of every commit
        # before it, or read on that connection when it came up (0: none yet).
        self._revision = 0
        self._revised = asyncio.Event()
        self._revision_source: RevisionSource | None = None

    @property
    def positioned_all(self) -> bool:
        """Every change heard has its primary position (tests wait for this)."""
        return self._positioned_through == self._generation

    async def wait_positioned(self) -> None:
        """Until every change heard so far has its primary position (tests wait)."""
        while not self.positioned_all and self._sampler is not None:
            await asyncio.shield(self._sampler)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def revision(self) -> int:
        return self._revision

    def revised(self, payload: str) -> None:
        """The listener heard a revision commit (tenant_service_revisions). Its connection
        delivers in commit order, so the announcements of that commit and of every earlier
        one have been applied: no entry held now predates any of them."""
        with contextlib.suppress(ValueError):
            self.revised_through(int(payload))

    def revised_through(self, revision: int) -> None:
        if revision > self._revision:
            self._revision = revision
            revised, self._revised = self._revised, asyncio.Event()
            revised.set()

    async def wait_revision(self, revision: int) -> None:
        """Until a revision at or past `revision` is known (tests wait for this)."""
        while self._revision < revision:
            await self._revised.wait()

    def track_revisions(self, source: RevisionSource) -> None:
        """Read the newest revision with `source` each time the listener comes up."""
        self._revision_source = source

    async def listening(self, conn: asyncpg.Connection) -> None:
        """The listener's connection listens now: what was committed before is the
        starting revision (enable() starts from an empty cache, so no entry predates it)."""
        if self._revision_source is not None:
            self.revised_through(await self._revision_source(conn))

    def held(self, kind: Kind, tenant_ids: list[UUID]) -> tuple[int, dict[UUID, CachedRead]] | None:
        """The entries held for these tenants, with a revision every one of them reflects
        at least (each is the tenant's document at that revision or a later one). None
        when get() would answer nothing (the cache is off, or the request needs a
        position this process may not have heard)."""
        if not self._enabled or required_position() is not None:
            return None
        found = {t: entry for t in tenant_ids if (entry := self.get(kind, t)) is not None}
        return self._revision, found

    def get(self, kind: Kind, tenant_id: UUID) -> CachedRead | None:
        if not self._enabled:
            return None
        if required_position() is not None:
            # The request brought X-Consistency-Token: a database server that has its write
            # answers. This process may not have heard that write yet (another process
            # made it), so no entry of its own can be trusted to include it.
            return None
        entry = self._entries.get((kind, tenant_id))
        if entry is not None:
            self._entries.move_to_end((kind, tenant_id))
        return entry

    def put(
        self,
        kind: Kind,
        tenant_id: UUID,
        entry: CachedRead,
        generation: int,
        replayed: int | None = None,
    ) -> None:
        """Cache a read that started at `generation`, unless a change announced since
        then may have altered it (its row may predate the change), or, for a replica's
        read (`replayed`: the position it had replayed), unless a change it has not
        replayed touches it."""
        if not self._enabled:
            return
        ids = path_ids(entry.node.ancestry_path)
        if generation != self._generation and self._overtaken(kind, tenant_id, ids, generation):
            return
        if replayed is not None and self._behind(kind, str(tenant_id), ids, replayed):
            return
        key = (kind, tenant_id)
        self._drop(key)
        self._entries[key] = entry
        for ancestor in ids:
            self._below.setdefault(ancestor, set()).add(key)
        while len(self._entries) > self.max_entries:
            self._drop(next(iter(self._entries)))

    def _overtaken(self, kind: Kind, tenant_id: UUID, ids: list[str], generation: int) -> bool:
        if not self._changes or self._changes[0].number > generation + 1:
            return True  # the changes since `generation` are no longer all known
        own = str(tenant_id)
        # Newest first, stopping at the read's generation: under steady writes a put
        # reads only the few changes since its read began, not all RECENT_CHANGES.
        for seen in reversed(self._changes):
            if seen.number <= generation:
                return False
            if seen.change.touches(kind, own, ids):
                return True
        return False

    def behind(self, kind: Kind, tenant_id: UUID, ancestry_path: str | None, replayed: int) -> bool:
        """Whether a replica read of this tenant (at `ancestry_path` as the replica saw
        it; None: the replica did not find it) that had replayed `replayed` may predate
        a change this process has heard."""
        own = str(tenant_id)
        ids = [own] if ancestry_path is None else path_ids(ancestry_path)
        return self._behind(kind, own, ids, replayed)

    def _behind(self, kind: Kind, own: str, ids: list[str], replayed: int) -> bool:
        if self._positioned_through == self._generation and replayed >= self._highest:
            return False  # the replica has replayed every change heard: no scan
        if self._forgotten_through > self._positioned_through or replayed < self._forgotten:
            return True  # a change no longer listed may lie past it
        return any(
            (seen.position is None or seen.position > replayed)
            and seen.change.touches(kind, own, ids)
            for seen in self._changes
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
        self._record(_Recorded(self._generation, change))
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

    def _record(self, seen: _Recorded) -> None:
        if len(self._changes) == self._changes.maxlen:
            oldest = self._changes[0]
            self._forgotten_through = oldest.number
            if oldest.position is not None:
                self._forgotten = max(self._forgotten, oldest.position)
        self._changes.append(seen)
        if self._source is not None and (self._sampler is None or self._sampler.done()):
            with contextlib.suppress(RuntimeError):  # no running loop: nothing samples
                # A context of its own: never the held transaction of the request whose
                # clear() happened to start it.
                self._sampler = asyncio.get_running_loop().create_task(
                    self._sample(self._source),
                    name="read-cache-positions",
                    context=contextvars.Context(),
                )

    def track_positions(self, source: PositionSource) -> None:
        """Sample the primary's WAL position with `source` after each change is heard
        (None from it: not sampled this time). Without a source no change gets a position,
        so every replica read of what a heard change touches goes to the primary."""
        self._source = source

    async def _sample(self, source: PositionSource) -> None:
        """Until every change heard has a position. One sample covers every change heard
        before it was asked for: their commits lie at or before the position."""
        while self._positioned_through < self._generation:
            through = self._generation
            try:
                position = await source()
            except Exception:
                position = None
            if position is None:
                await asyncio.sleep(RESAMPLE_SECONDS)
                continue
            self.positioned(through, position)

    def positioned(self, through: int, position: int) -> None:
        """The primary was at `position` after the changes numbered up to `through`
        arrived."""
        if through <= self._positioned_through:
            return
        for seen in reversed(self._changes):
            if seen.number <= self._positioned_through:
                break
            if seen.number <= through:
                seen.position = position
        if self._forgotten_through > self._positioned_through:
            self._forgotten = max(self._forgotten, position)  # those up to `through`
        self._highest = max(self._highest, position)
        self._positioned_through = through

    async def stop(self) -> None:
        """Stop sampling for good (the app is closing its database)."""
        self._source = None
        sampler, self._sampler = self._sampler, None
        if sampler is not None:
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)

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
