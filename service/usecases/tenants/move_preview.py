"""Impact preview of a move (a dry run): which tenants of the subtree would resolve a
config entry or permission policy differently under the new parent, from what to what
and from which source, and whether the move would be refused (CYCLE_DETECTED,
DEPTH_LIMIT_EXCEEDED, a value schema or budget of the new ancestors, a budget inside
the subtree). One snapshot; nothing written, emitted or invalidated: the constraints are
judged by making the move in a savepoint that is rolled back."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.repositories.tenants import TenantNode
from service.schemas.config import PreviewQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import active, root_denied, visible, visible_active
from service.usecases.entries.impact import CONSTRAINT_CODES, refusal
from service.usecases.tenants.moves import TenantMoves, cycle_detected

NIL = UUID(int=0)


def _refusal(error: ServiceError) -> dict[str, Any]:
    return refusal(error)


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
    ) -> tuple[dict[str, Any], UUID | None]:
        if new_parent_id is None and principal.is_scoped:
            raise root_denied()

        async def work(conn: asyncpg.Connection) -> tuple[dict[str, Any], UUID | None]:
            return await self._preview(conn, principal, tenant_id, new_parent_id, query)

        return await self.db.transaction(work, isolation="repeatable_read")

    async def _preview(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        new_parent_id: UUID | None,
        query: PreviewQuery,
    ) -> tuple[dict[str, Any], UUID | None]:
        tenants = self.repos.tenants
        wanted = [tenant_id] + ([new_parent_id] if new_parent_id else [])
        nodes = await tenants.get_tenant_nodes(conn, wanted)
        node = visible_active(principal, nodes.get(tenant_id))
        parent = None
        if new_parent_id is not None:
            parent = active(visible(principal, nodes.get(new_parent_id)))
        refused: dict[str, Any] | None = None
        if parent is not None and f"/{node.id}" in parent.ancestry_path:
            refused = _refusal(cycle_detected())
        else:
            height, _size = await tenants.subtree_height(conn, node.id)
            new_depth = parent.depth + 1 if parent else 0
            if new_depth + height > self.max_depth:
                refused = _refusal(ServiceError(
                    "DEPTH_LIMIT_EXCEEDED",
                    f"the move would put tenants at depth {new_depth + height}, past "
                    f"MAX_TENANT_DEPTH ({self.max_depth})",
                ))  # fmt: skip
        if refused is None and node.parent_id != new_parent_id:
            refused = await self._constraint_refusal(conn, node, parent)
        page: list[tuple[UUID, list[dict[str, Any]]]] = []
        total = 0
        more = False
        if refused is None and node.parent_id != new_parent_id:
            rows, total = await self.repos.impact.preview_move(
                conn, tenant_id, new_parent_id, after_id=query.cursor or NIL, limit=query.limit + 1
            )
            more = len(rows) > query.limit
            page = rows[: query.limit]
        document = {
            "dry_run": True,
            "tenant_id": str(tenant_id),
            "new_parent_id": None if new_parent_id is None else str(new_parent_id),
            "refused": refused,
            "changed_tenants": total,
            "changes": [
                {"tenant_id": str(t), "entries": [_entry(t, e) for e in entries]}
                for t, entries in page
            ],
        }
        return document, (page[-1][0] if more else None)

    async def _constraint_refusal(
        self, conn: asyncpg.Connection, node: TenantNode, parent: TenantNode | None
    ) -> dict[str, Any] | None:
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
            return _refusal(error)


def _entry(tenant_id: UUID, e: dict[str, Any]) -> dict[str, Any]:
    """One changed entry; `shadows_own` when a new lock overrides the tenant's own entry."""
    old, new = e["old"], e["new"]
    own = str(tenant_id)
    shadows = (
        old is not None and new is not None and old["source_tenant_id"] == own
        and new["source_tenant_id"] != own
    )  # fmt: skip
    return {**e, "shadows_own": shadows}
