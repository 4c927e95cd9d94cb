"""Moving a subtree under a new parent (or to the top as a root).

The move locks the roots of both trees FOR UPDATE in id order (creates and archives
hold the same roots FOR SHARE), re-reads both ends, then rewrites closure rows, paths
and depths of the whole subtree with three set-based statements.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, RetryTransaction, ServiceError
from service.repositories.tenants import TenantNode, TenantRow
from service.usecases.common.deps import Deps
from service.usecases.common.protection import refuse_protected
from service.usecases.common.recording import Event, tenant_audit
from service.usecases.common.tenant_access import (
    active,
    check_if_match,
    root_denied,
    visible,
    visible_active,
)
from service.usecases.entries.constraints import ConfigConstraints, Written
from service.views.base import opt_str

# A refused move names at most this many stranded keys (the message gives the count).
MAX_DETAILS = 20


def cycle_detected() -> ServiceError:
    return ServiceError(
        "CYCLE_DETECTED", "a tenant cannot be moved under itself or one of its descendants"
    )


def _is_cycle(node: TenantNode, new_parent: TenantNode | None) -> bool:
    return new_parent is not None and f"/{node.id}" in new_parent.ancestry_path


class TenantMoves:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.max_depth = deps.settings.max_tenant_depth
        self.constraints = ConfigConstraints(deps)

    async def move(
        self,
        principal: Principal,
        actor: Actor,
        tenant_id: UUID,
        new_parent_id: UUID | None,
        *,
        if_match: str | None,
    ) -> TenantRow:
        if new_parent_id is None and principal.is_scoped:
            raise root_denied()

        async def work(conn: asyncpg.Connection) -> TenantRow:
            node, parent = await self._read(conn, principal, tenant_id, new_parent_id)
            if node.parent_id == new_parent_id:
                return await self._unchanged(conn, tenant_id, if_match)
            if _is_cycle(node, parent):
                raise cycle_detected()
            roots = {node.root_id} | ({parent.root_id} if parent else set())
            await self.tenants.lock_tree_roots_exclusive(conn, sorted(roots))
            locked_node, locked_parent = await self._read(conn, principal, tenant_id, new_parent_id)
            locked_roots = {locked_node.root_id} | (
                {locked_parent.root_id} if locked_parent else set()
            )
            if locked_roots != roots:
                raise RetryTransaction  # a concurrent move changed a tree before we locked it
            # Leaving a protected subtree or entering one changes it.
            ends = [tenant_id] + ([new_parent_id] if new_parent_id else [])
            await refuse_protected(conn, self.deps.repos.protection, ends)
            return await self._move_locked(conn, actor, locked_node, locked_parent, if_match)

        return await self.deps.db.transaction(work)

    async def _read(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        new_parent_id: UUID | None,
    ) -> tuple[TenantNode, TenantNode | None]:
        wanted = [tenant_id] + ([new_parent_id] if new_parent_id else [])
        nodes = await self.tenants.get_tenant_nodes(conn, wanted)
        node = visible_active(principal, nodes.get(tenant_id))
        parent = None
        if new_parent_id is not None:
            parent = active(visible(principal, nodes.get(new_parent_id)))
        return node, parent

    async def _refuse_stranded_keys(
        self, conn: asyncpg.Connection, node: TenantNode, parent: TenantNode | None
    ) -> None:
        """409 when the move would take a key out of the subtree owning its role: the
        role's owner could otherwise keep editing a key in another tree (docs/decisions/keys.md,
        "Roles and moves"). Runs under the tree locks, so no assignment slips past."""
        stranded = await self.deps.repos.api_keys.list_api_keys_leaving_role_subtree(
            conn, node.id, parent.id if parent else None
        )
        if stranded:
            raise ServiceError(
                "ROLE_OUTSIDE_SUBTREE",
                f"the move would take {len(stranded)} API key(s) out of the subtree of the "
                "tenant owning their role; remove or replace those roles first "
                "(DELETE or PUT /api/v1/api-keys/{id}/role)",
                details=[
                    FieldError(
                        f"api_keys/{s.api_key_id}", f"holds role {s.role_id} of {s.role_tenant_id}"
                    )
                    for s in stranded[:MAX_DETAILS]
                ],
            )

    async def relocate(
        self, conn: asyncpg.Connection, node: TenantNode, parent: TenantNode | None
    ) -> str:
        """Rewrite the subtree under parent, judged by the constraints of its new place:
        409 CONFIG_SCHEMA_CONFLICT, 409 BUDGET_EXCEEDED or 422 BUDGET_NOT_NUMERIC refuse
        the move. The move runs this under its tree locks; its preview runs it in a
        savepoint it rolls back, so both answer the same. Returns the new path."""
        parent_id = parent.id if parent else None
        await self.constraints.check_move(conn, node.id, parent_id)
        new_path = f"{parent.ancestry_path if parent else ''}/{node.id}"
        await self.tenants.move_subtree(
            conn,
            node.id,
            new_parent_id=parent_id,
            old_path=node.ancestry_path,
            new_path=new_path,
            depth_delta=(parent.depth + 1 if parent else 0) - node.depth,
        )
        # The subtree's values now count against the new parent's budgets, and its own
        # budgets may resolve to other values under new ancestors.
        own = {
            e.key: None if e.sensitive else e.value
            for e in await self.deps.repos.config.list_config_entries(conn, node.id)
        }
        await self.constraints.check_budgets(conn, [Written(node.id, parent_id, own)], None)
        return new_path

    async def _unchanged(
        self, conn: asyncpg.Connection, tenant_id: UUID, if_match: str | None
    ) -> TenantRow:
        current = await self.tenants.get_tenant(conn, tenant_id)
        assert current is not None
        check_if_match(if_match, current)
        return current

    async def _move_locked(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        node: TenantNode,
        parent: TenantNode | None,
        if_match: str | None,
    ) -> TenantRow:
        if node.parent_id == (parent.id if parent else None):
            return await self._unchanged(conn, node.id, if_match)
        if _is_cycle(node, parent):
            raise cycle_detected()
        before = await self.tenants.get_tenant(conn, node.id)
        assert before is not None
        check_if_match(if_match, before)
        height, size = await self.tenants.subtree_height(conn, node.id)
        new_depth = parent.depth + 1 if parent else 0
        if new_depth + height > self.max_depth:
            raise ServiceError(
                "DEPTH_LIMIT_EXCEEDED",
                f"the move would put tenants at depth {new_depth + height}, past "
                f"MAX_TENANT_DEPTH ({self.max_depth})",
            )
        await self._refuse_stranded_keys(conn, node, parent)
        new_path = await self.relocate(conn, node, parent)
        after = await self.tenants.get_tenant(conn, node.id)
        assert after is not None
        old_parent = opt_str(node.parent_id)
        new_parent = opt_str(parent.id if parent else None)
        await self.deps.recorder.record(
            conn,
            actor,
            tenant_audit(
                "tenant.moved",
                node.id,
                changes={
                    "before": {"parent_id": old_parent, "ancestry_path": node.ancestry_path},
                    "after": {"parent_id": new_parent, "ancestry_path": new_path},
                },
            ),
            [
                Event(
                    "tenant.moved",
                    node.id,
                    {
                        "id": str(node.id),
                        "slug": after.slug,
                        "old_parent_id": old_parent,
                        "new_parent_id": new_parent,
                        "old_ancestry_path": node.ancestry_path,
                        "new_ancestry_path": new_path,
                        "descendants_moved": size - 1,
                    },
                )
            ],
        )
        return after
