"""Contexts delivered in bulk and as they change (docs/context-delivery.md): the stream
of context changes of a subtree, read from the revision log (migration 0033) page by
page; hydration (every context of a subtree, with the revision it reflects); and batch
reads of named tenants. Contexts are masked as GET /context masks them by default."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from uuid import UUID

import orjson

from service.auth.principal import Principal
from service.base.etags import Rendered
from service.caches.read_cache import CachedRead, Placed, ReadCache
from service.repositories.revisions import LoggedChange
from service.repositories.tenants import JsonRows
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active

# Past every index of a revision: (n, LAST_INDEX) is "all of revision n".
LAST_INDEX = 2**31 - 1
HYDRATION_FIRST_ROWS = 200
HYDRATION_CHUNK_ROWS = 500


@dataclass(frozen=True, slots=True)
class StreamEvent:
    name: str  # "context" or "removed"
    id: str  # "<revision>:<index>"
    data: str  # JSON text


@dataclass(frozen=True, slots=True)
class Subscription:
    """Where a stream reads: the subtree of root_id, within the caller's scope."""

    root_id: UUID
    scope_id: UUID | None
    principal: Principal


@dataclass(frozen=True, slots=True)
class StreamStart:
    subscription: Subscription
    after: tuple[int, int]
    # The oldest revision kept, when the position cannot be followed (a reset).
    reset: int | None


@dataclass(frozen=True, slots=True)
class ChangePage:
    events: list[StreamEvent]
    after: tuple[int, int]
    caught_up: bool  # the page reached the newest revision read with it


@dataclass(frozen=True, slots=True)
class BatchAnswer:
    revision: int
    body: bytes  # {"contexts": [...], "not_found": [...]}


class ContextDelivery:
    def __init__(self, deps: Deps, cache: ReadCache) -> None:
        self.deps = deps
        self.cache = cache
        self.revisions = deps.repos.revisions
        self.context = deps.repos.context
        self.tenants = deps.repos.tenants

    async def open_stream(
        self, principal: Principal, tenant_id: UUID, position: tuple[int, int] | None
    ) -> StreamStart:
        """Check access and the position: a position older than the kept log (or past
        the newest revision) is a reset; none starts at the newest revision."""
        async with self.deps.db.connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            current = await self.revisions.current_revision(conn)
            horizon = await self.revisions.revision_horizon(conn)
        subscription = Subscription(tenant_id, principal.tenant_id, principal)
        if position is None:
            return StreamStart(subscription, (current, LAST_INDEX), None)
        if position < (horizon.purged_through, LAST_INDEX) or position[0] > current:
            return StreamStart(subscription, position, horizon.oldest_kept)
        return StreamStart(subscription, position, None)

    async def page(
        self, subscription: Subscription, after: tuple[int, int], page_size: int
    ) -> ChangePage:
        """The events after `after`, up to page_size rows of the log, up to the newest
        revision committed now."""
        async with self.deps.db.connection() as conn:
            through = await self.revisions.current_revision(conn)
            rows = await self.revisions.list_context_changes(
                conn,
                root_id=subscription.root_id,
                scope_id=subscription.scope_id,
                after=after,
                through_revision=through,
                page_size=page_size,
            )
            inside = list(dict.fromkeys(r.tenant_id for r in rows if r.inside))
            rendered = await self.context.render_tenant_contexts(conn, inside) if inside else []
        documents = {
            c.id: c.document
            for c in rendered
            if c.status == "active"
            and f"/{subscription.root_id}" in c.ancestry_path
            and subscription.principal.can_see_path(c.ancestry_path)
        }
        events = [e for e in (_event(r, documents) for r in rows) if e is not None]
        if len(rows) == page_size:
            return ChangePage(events, (rows[-1].revision, rows[-1].idx), False)
        return ChangePage(events, max(after, (through, LAST_INDEX)), True)

    @asynccontextmanager
    async def hydrate(
        self, principal: Principal, tenant_id: UUID
    ) -> AsyncIterator[tuple[int, AsyncIterator[JsonRows]]]:
        """The revision and every context of the subtree, read from one snapshot (a
        cursor in a read-only REPEATABLE READ transaction on the primary), so that the
        stream continues exactly from that revision."""
        async with (
            self.deps.db.connection() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            node = visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            revision = await self.revisions.current_revision(conn)
            rows = self.context.stream_subtree_contexts(
                conn,
                node.ancestry_path,
                first_rows=HYDRATION_FIRST_ROWS,
                chunk_rows=HYDRATION_CHUNK_ROWS,
            )
            async with aclosing(rows):
                yield revision, rows

    async def batch(self, principal: Principal, tenant_ids: list[UUID]) -> BatchAnswer:
        """The contexts of the named tenants the caller can see (in the order asked,
        each once), the others listed as not found, with a revision every context
        reflects at least (docs/decisions/revisions.md): from the read cache where it
        holds them, the rest read at once and cached."""
        wanted = list(dict.fromkeys(tenant_ids))
        held = self.cache.held("context", wanted)
        if held is None:
            return await self._snapshot(principal, wanted)
        revision, found = held
        missing = [t for t in wanted if t not in found]
        if missing:
            # Read after the revision was taken: these reflect it or a later one.
            generation = self.cache.generation
            async with self.deps.db.connection() as conn:
                rendered = await self.context.render_tenant_contexts(conn, missing)
            for c in rendered:
                read = CachedRead(c, Rendered.of_text(c.document))
                found[c.id] = read
                if c.status == "active":
                    self.cache.put("context", c.id, read, generation)
        parts: list[bytes] = []
        not_found: list[str] = []
        for t in wanted:
            entry = found.get(t)
            if entry is not None and _shown(principal, entry.node):
                parts.append(entry.rendered.body)
            else:
                not_found.append(str(t))
        body = b'{"contexts":[%s],"not_found":%s}' % (b",".join(parts), orjson.dumps(not_found))
        return BatchAnswer(revision, body)

    async def _snapshot(self, principal: Principal, wanted: list[UUID]) -> BatchAnswer:
        """The batch from one snapshot with its revision (the cache cannot answer)."""
        async with (
            self.deps.db.connection() as conn,
            conn.transaction(isolation="repeatable_read", readonly=True),
        ):
            revision = await self.revisions.current_revision(conn)
            rendered = await self.context.render_tenant_contexts(conn, wanted)
        found = {
            c.id: c.document
            for c in rendered
            if c.status == "active" and principal.can_see_path(c.ancestry_path)
        }
        contexts = ",".join(found[t] for t in wanted if t in found)
        missing = orjson.dumps([str(t) for t in wanted if t not in found]).decode()
        return BatchAnswer(revision, f'{{"contexts":[{contexts}],"not_found":{missing}}}'.encode())


def _shown(principal: Principal, node: Placed) -> bool:
    return node.status == "active" and principal.can_see_path(node.ancestry_path)


def _event(row: LoggedChange, documents: dict[UUID, str]) -> StreamEvent | None:
    event_id = f"{row.revision}:{row.idx}"
    if row.inside:
        document = documents.get(row.tenant_id)
        if document is None:
            # Gone from the subtree since: a later revision's removal tells it.
            return None
        data = f'{{"revision":{row.revision},"tenant_id":"{row.tenant_id}","context":{document}}}'
        return StreamEvent("context", event_id, data)
    data = f'{{"revision":{row.revision},"tenant_id":"{row.tenant_id}","reason":"{row.change}"}}'
    return StreamEvent("removed", event_id, data)
