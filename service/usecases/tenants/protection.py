"""Protected subtrees: mark or unmark a tenant (an admin operation, audited and
evented). Writes at or below a protected tenant are refused by
service.usecases.common.protection unless a change request applies them."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.repositories.protection import Protection
from service.usecases.common.deps import Deps
from service.usecases.common.recording import Event, tenant_audit
from service.usecases.common.tenant_access import visible, visible_active


class TenantProtections:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.protection = deps.repos.protection

    async def protect(self, principal: Principal, actor: Actor, tenant_id: UUID) -> Protection:
        """Mark the tenant protected (again: nothing changes)."""

        async def work(conn: asyncpg.Connection) -> Protection:
            await self._lock_tree(conn, principal, tenant_id)
            added = await self.protection.insert_protection(conn, tenant_id, actor.actor_id)
            if added is None:
                current = await self.protection.get_protection(conn, tenant_id)
                assert current is not None
                return current
            await self._record(conn, actor, tenant_id, "tenant.protected", False, True)
            return added

        return await self.deps.db.transaction(work)

    async def unprotect(self, principal: Principal, actor: Actor, tenant_id: UUID) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            await self._lock_tree(conn, principal, tenant_id)
            if await self.protection.delete_protection(conn, tenant_id) is not None:
                await self._record(conn, actor, tenant_id, "tenant.unprotected", True, False)

        await self.deps.db.transaction(work)

    async def _lock_tree(
        self, conn: asyncpg.Connection, principal: Principal, tenant_id: UUID
    ) -> None:
        """The tenant's tree root for update: every write in the tree holds it shared
        (or the tenant for update), so none is halfway past the protection check."""
        seen = visible(
            principal, (await self.tenants.get_tenant_nodes(conn, [tenant_id])).get(tenant_id)
        )
        await self.tenants.lock_tenant_node(conn, seen.root_id)
        visible_active(principal, await self.tenants.lock_tenant_node(conn, tenant_id))

    async def _record(
        self,
        conn: asyncpg.Connection,
        actor: Actor,
        tenant_id: UUID,
        action: str,
        before: bool,
        after: bool,
    ) -> None:
        await self.deps.recorder.record(
            conn,
            actor,
            tenant_audit(
                action,
                tenant_id,
                changes={"before": {"protected": before}, "after": {"protected": after}},
            ),
            [Event(action, tenant_id, {"id": str(tenant_id), "protected": after})],
        )
