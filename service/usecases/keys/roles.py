"""Roles: create, read, list, patch, delete. A role's scopes replace the own scopes of
every key holding it, so changing or deleting a role changes those keys at once (in
this process directly, in the others through migration 0006's announcements)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError
from service.base.ids import uuid7
from service.repositories.roles import NewRole, RoleRow
from service.schemas.api_keys import ListRolesQuery, RoleCreate, RolePatch
from service.usecases.common.tenant_access import visible
from service.usecases.keys.access import (
    KeyStoreChanges,
    change_then_forget,
    changed_fields,
    owning_tenant,
    require_scopes,
    visible_role,
)
from service.usecases.keys.limits import KeyLimits, require_within


def _audit_view(role: RoleRow) -> dict[str, Any]:
    return {
        "name": role.name,
        "description": role.description,
        "scopes": role.scopes,
        "tenant_id": None if role.tenant_id is None else str(role.tenant_id),
    }


class RoleManagement(KeyStoreChanges):
    async def get(self, principal: Principal, role_id: UUID) -> RoleRow:
        return visible_role(
            principal, await self.deps.db.read(lambda c: self.roles.get_role(c, role_id))
        )

    async def list(self, principal: Principal, query: ListRolesQuery) -> list[RoleRow]:
        async with self.deps.db.read_connection() as conn:
            if query.tenant_id is not None:
                nodes = await self.tenants.get_tenant_nodes(conn, [query.tenant_id])
                visible(principal, nodes.get(query.tenant_id))
            return await self.roles.list_roles(
                conn, tenant_id=query.tenant_id, subtree_of=principal.tenant_id
            )

    async def create(self, principal: Principal, actor: Actor, body: RoleCreate) -> RoleRow:
        require_scopes(principal, body.scopes, "a role with these scopes")

        async def work(conn: asyncpg.Connection) -> RoleRow:
            await owning_tenant(conn, self.tenants, principal, body.tenant_id, "roles")
            role_id = uuid7()
            await self.roles.insert_role(
                conn,
                NewRole(
                    id=role_id,
                    tenant_id=body.tenant_id,
                    name=body.name,
                    description=body.description,
                    scopes=sorted(set(body.scopes)),
                ),
            )
            role = await self._reread(conn, role_id)
            await self._audit(
                conn, actor, "role.created", role, {"before": None, "after": _audit_view(role)}
            )
            return role

        return await self.deps.db.transaction(work)

    async def update(
        self, principal: Principal, actor: Actor, role_id: UUID, patch: RolePatch
    ) -> RoleRow:
        if patch.scopes is not UNSET:
            require_scopes(principal, patch.scopes, "giving a role these scopes")

        async def work(conn: asyncpg.Connection) -> RoleRow:
            role = visible_role(principal, await self.roles.lock_role(conn, role_id))
            require_scopes(principal, role.scopes, "changing this role")
            name = role.name if patch.name is UNSET else patch.name
            description = role.description if patch.description is UNSET else patch.description
            scopes: list[str] = role.scopes if patch.scopes is UNSET else sorted(set(patch.scopes))
            before = _audit_view(role)
            after_view = {**before, "name": name, "description": description, "scopes": scopes}
            old, new = changed_fields(before, after_view)
            if not new:
                return role
            if "scopes" in new:
                await self._holders_within(conn, principal, role_id, "changing this role")
            await self.roles.update_role(
                conn, role_id, name=name, description=description, scopes=scopes
            )
            after = await self._reread(conn, role_id)
            await self._audit(conn, actor, "role.updated", after, {"before": old, "after": new})
            return after

        return await change_then_forget(self.deps.db, work, self.cache.invalidate_role, role_id)

    async def delete(self, principal: Principal, actor: Actor, role_id: UUID) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            role = visible_role(principal, await self.roles.lock_role(conn, role_id))
            require_scopes(principal, role.scopes, "deleting this role")
            await self._refuse_stranded_holders(conn, role_id)
            await self._holders_within(conn, principal, role_id, "deleting this role")
            holders = await self.keys.list_api_keys_with_role(conn, role_id)
            # Keys holding the role fall back to their own scopes: no escalation either.
            require_scopes(
                principal,
                {scope for _, scopes in holders for scope in scopes},
                "deleting this role (keys holding it would fall back to their own scopes)",
            )
            await self.roles.delete_role(conn, role_id)
            await self._audit(
                conn,
                actor,
                "role.deleted",
                role,
                {
                    "before": _audit_view(role),
                    "after": None,
                    "api_keys_reverted": [str(key_id) for key_id, _ in holders],
                },
            )

        await change_then_forget(self.deps.db, work, self.cache.invalidate_role, role_id)

    async def _refuse_stranded_holders(self, conn: asyncpg.Connection, role_id: UUID) -> None:
        """A key outside its role's subtree gets nothing from the role; deleting the role
        would hand it back its own scopes, by a caller who cannot even see it. Its own
        tree's admins remove the role first (the count only: those keys are not the
        caller's to know)."""
        stranded = await self.keys.count_api_keys_outside_role_subtree(conn, role_id)
        if stranded:
            raise ServiceError(
                "ROLE_OUTSIDE_SUBTREE",
                f"the role is held by {stranded} API key(s) outside its tenant's subtree; "
                "their own admins must remove it from them first",
            )

    async def _holders_within(
        self, conn: asyncpg.Connection, principal: Principal, role_id: UUID, doing: str
    ) -> None:
        """A role change reaches every key holding it: none may outlive or outpace the
        caller (an expiring key must not make a permanent key stronger)."""
        if principal.actor_type != "api_key":
            return
        for holder in await self.keys.list_api_key_limits_with_role(conn, role_id):
            limits = KeyLimits(
                holder.expires_at, holder.rate_limit_max, holder.rate_limit_window_seconds
            )
            require_within(principal, self.deps.settings, limits, f"{doing} (key {holder.id})")

    async def _reread(self, conn: asyncpg.Connection, role_id: UUID) -> RoleRow:
        role = await self.roles.get_role(conn, role_id)
        assert role is not None
        return role

    async def _audit(
        self, conn: asyncpg.Connection, actor: Actor, action: str, role: RoleRow, changes: Any
    ) -> None:
        await self.deps.recorder.record_owned(conn, actor, action, "role", role, changes)
