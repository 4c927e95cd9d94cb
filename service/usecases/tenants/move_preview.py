"""Impact preview of a move (a dry run): which tenants of the subtree would resolve a
config entry or permission policy differently under the new parent, from what to what
and from which source, and whether the move would be refused (CYCLE_DETECTED,
DEPTH_LIMIT_EXCEEDED, a value schema or budget of the new ancestors, a budget inside
the subtree). One snapshot; nothing written, emitted or invalidated: the constraints are
judged by making the move in a savepoint that is rolled back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import CONSTRAINT_CODES, ServiceError
from service.repositories.tenants import TenantNode
from service.schemas.config import PreviewQuery
from service.usecases.common.deps import Deps
from service.usecases.common.pages import page_of
from service.usecases.common.tenant_access import active, root_denied, visible, visible_active
from service.usecases.entries.impact import NIL
from service.usecases.tenants.moves import TenantMoves, cycle_detected


@dataclass(frozen=True, slots=True)
class MoveImpact:
    """What a move preview found: one page of the subtree's changed tenants, each with
    its changed entries as the statement gives them (kind, key, old, new)."""

    tenant_id: UUID
    new_parent_id: UUID | None
    refused: ServiceError | None  # the error the real move would answer
    changed_tenants: int
    changes: list[tuple[UUID, list[dict[str, Any]]]]
    next_cursor: UUID | None


class _Undo(Exception):
    """Rolls back the trial move of a preview."""


class MovePreviews:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.repos = deps.repos
        self.max_depth = deps.settings.max_tenant_depth
        self.moves = TenantMoves(deps)

    async def preview(
        self,
        principal: Principal,
        tenant_id: UUID,
        new_parent_id: UUID | None,
        query: PreviewQuery,
    ) -> MoveImpact:
        if new_parent_id is None and principal.is_scoped:
            raise root_denied()

        async def work(conn: asyncpg.Connection) -> MoveImpact:
            return await self._preview(conn, principal, tenant_id, new_parent_id, query)

        return await self.db.transaction(work, isolation="repeatable_read")

    async def _preview(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        new_parent_id: UUID | None,
        query: PreviewQuery,
    ) -> MoveImpact:
        tenants = self.repos.tenants
        wanted = [tenant_id] + ([new_parent_id] if new_parent_id else [])
        nodes = await tenants.get_tenant_nodes(conn, wanted)
        node = visible_active(principal, nodes.get(tenant_id))
        parent = None
        if new_parent_id is not None:
            parent = active(visible(principal, nodes.get(new_parent_id)))
        refused: ServiceError | None = None
        if parent is not None and f"/{node.id}" in parent.ancestry_path:
            refused = cycle_detected()
        else:
            height, _size = await tenants.subtree_height(conn, node.id)
            new_depth = parent.depth + 1 if parent else 0
            if new_depth + height > self.max_depth:
                refused = ServiceError(
                    "DEPTH_LIMIT_EXCEEDED",
                    f"the move would put tenants at depth {new_depth + height}, past "
                    f"MAX_TENANT_DEPTH ({self.max_depth})",
                )
        if refused is None and node.parent_id != new_parent_id:
            refused = await self._constraint_refusal(conn, node, parent)
        page: list[tuple[UUID, list[dict[str, Any]]]] = []
        total = 0
        next_cursor = None
        if refused is None and node.parent_id != new_parent_id:
            rows, total = await self.repos.impact.preview_move(
                conn, tenant_id, new_parent_id, after_id=query.cursor or NIL, limit=query.limit + 1
            )
            page, next_cursor = page_of(rows, query.limit, lambda row: row[0])
        return MoveImpact(tenant_id, new_parent_id, refused, total, page, next_cursor)

    async def _constraint_refusal(
        self, conn: asyncpg.Connection, node: TenantNode, parent: TenantNode | None
    ) -> ServiceError | None:
        """The schema or budget refusal the move would meet: the move's own checks, run
        on the moved subtree in a savepoint that is then rolled back."""
        try:
            async with conn.transaction():
                await self.moves.relocate(conn, node, parent)
                raise _Undo
        except _Undo:
            return None
        except ServiceError as error:
            if error.code not in CONSTRAINT_CODES:
                raise
            return error
