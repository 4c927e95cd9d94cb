"""Impact previews of an entry change (a dry run), shared by config entries and permission
policies as their writes are (writes.py): which tenants' resolved entry for the key would
change, from what to what and from which source, which descendants' own entries a lock
would override, and whether the write would be refused. Each kind describes itself in an
ImpactKind. A preview reads in one snapshot and writes nothing: no entry, no event, no
audit entry, no cache invalidation. It answers typed data (EntryPreview);
service/views/impact.py renders it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.repositories.tenants import TenantNode
from service.schemas.config import PreviewQuery
from service.usecases.common.deps import Deps
from service.usecases.common.pages import page_of
from service.usecases.common.tenant_access import visible_active
from service.usecases.entries.writes import key_locked

NIL = UUID(int=0)
SHADOWED_LIMIT = 100

B = TypeVar("B", bound="PreviewBody")  # the request body
E = TypeVar("E")  # the tenant's own entry now
N = TypeVar("N")  # the tenant's own entry after the change (None: removed)
C = TypeVar("C", bound="ChangedTenant")  # a tenant whose resolved entry would change
S = TypeVar("S")  # a descendant's own entry a lock would override


Change = Literal["set", "delete"]


class PreviewBody(Protocol):
    @property
    def change(self) -> Change: ...


class ChangedTenant(Protocol):
    @property
    def tenant_id(self) -> UUID: ...


@dataclass(frozen=True, slots=True)
class EntryPreview(Generic[C, S]):
    """What a preview found: one page of the changed tenants, the shadowed entries."""

    tenant_id: UUID
    key: str
    change: Change
    refused: ServiceError | None  # the error the real write would answer
    changed_tenants: int
    changes: list[C]
    shadowed: list[S]  # the first SHADOWED_LIMIT
    shadowed_total: int
    next_cursor: UUID | None


@dataclass(frozen=True, slots=True)
class ImpactKind(Generic[B, E, N, C, S]):
    """How one kind of entry is previewed."""

    locked_code: str  # what a write under an ancestor's lock answers
    kind: str  # "config" or "permission": the wording of that answer
    not_found: Callable[[str], ServiceError]  # what deleting a missing entry answers
    get: Callable[[asyncpg.Connection, UUID, str], Awaitable[E | None]]
    find_locked: Callable[[asyncpg.Connection, UUID, Sequence[str]], Awaitable[dict[str, UUID]]]
    proposed: Callable[[B, E | None], N]  # the own entry a set would leave
    locks: Callable[[N], bool]  # whether that entry overrides the descendants' own
    changes: Callable[
        [asyncpg.Connection, UUID, str, N | None, UUID, int], Awaitable[tuple[list[C], int]]
    ]
    shadowed: Callable[[asyncpg.Connection, UUID, str, int], Awaitable[tuple[list[S], int]]]
    # The value schema or budget refusal the write would meet (config only).
    constraint_refusal: (
        Callable[[asyncpg.Connection, TenantNode, str, B, N | None], Awaitable[ServiceError | None]]
        | None
    ) = None


class EntryImpact(Generic[B, E, N, C, S]):
    def __init__(self, deps: Deps, kind: ImpactKind[B, E, N, C, S]) -> None:
        self.db = deps.db
        self.tenants = deps.repos.tenants
        self.kind = kind

    async def preview(
        self, principal: Principal, tenant_id: UUID, key: str, body: B, query: PreviewQuery
    ) -> EntryPreview[C, S]:
        async def work(conn: asyncpg.Connection) -> EntryPreview[C, S]:
            return await self._preview(conn, principal, tenant_id, key, body, query)

        # Read only, one snapshot: every figure describes the same moment.
        return await self.db.transaction(work, isolation="repeatable_read")

    async def _preview(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        key: str,
        body: B,
        query: PreviewQuery,
    ) -> EntryPreview[C, S]:
        kind = self.kind
        nodes = await self.tenants.get_tenant_nodes(conn, [tenant_id])
        node = visible_active(principal, nodes.get(tenant_id))
        before = await kind.get(conn, tenant_id, key)
        refused = await self._refusal(conn, node.parent_id, key, body.change, before is None)
        new = kind.proposed(body, before) if body.change == "set" else None
        if refused is None and kind.constraint_refusal is not None:
            refused = await kind.constraint_refusal(conn, node, key, body, new)
        changes, total = await kind.changes(
            conn, tenant_id, key, new, query.cursor or NIL, query.limit + 1
        )
        shadowed: list[S] = []
        shadowed_total = 0
        if new is not None and kind.locks(new):
            shadowed, shadowed_total = await kind.shadowed(conn, tenant_id, key, SHADOWED_LIMIT)
        page, next_cursor = page_of(changes, query.limit, lambda c: c.tenant_id)
        return EntryPreview(
            tenant_id=tenant_id,
            key=key,
            change=body.change,
            refused=refused,
            changed_tenants=total,
            changes=page,
            shadowed=shadowed,
            shadowed_total=shadowed_total,
            next_cursor=next_cursor,
        )

    async def _refusal(
        self,
        conn: asyncpg.Connection,
        parent_id: UUID | None,
        key: str,
        change: Change,
        missing: bool,
    ) -> ServiceError | None:
        """The error the real write would answer before its constraints; None: none."""
        if parent_id is not None:
            held = await self.kind.find_locked(conn, parent_id, [key])
            if key in held:
                return key_locked(self.kind.locked_code, self.kind.kind, key, held[key])
        if change == "delete" and missing:
            return self.kind.not_found(key)
        return None
