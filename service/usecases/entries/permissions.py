"""A tenant's own permission policies: list, read, create or replace, delete."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError
from service.base.timefmt import iso
from service.repositories.permissions import PermissionPolicyRow
from service.schemas.config import PermissionPut
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.common.tenant_access import reading_active_tenant
from service.usecases.entries.writes import EntryStore, EntryWrites

DEFAULT_MODE = "INHERIT"


def permission_not_found(key: str) -> ServiceError:
    return ServiceError("PERMISSION_NOT_FOUND", f"the tenant has no permission policy {key!r}")


def _audit_view(policy: PermissionPolicyRow | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    view: dict[str, Any] = {"value": policy.value, "mode": policy.mode}
    if policy.expires_at is not None:
        view["expires_at"] = iso(policy.expires_at)
    return view


def _event(kind: str, policy: PermissionPolicyRow) -> Event:
    return Event(
        f"permission.{kind}",
        policy.tenant_id,
        {
            "tenant_id": str(policy.tenant_id),
            "key": policy.key,
            "value": policy.value,
            "mode": policy.mode,
        },
    )


class PermissionPolicies:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.permissions = deps.repos.permissions
        self.writes = EntryWrites(
            deps,
            EntryStore(
                kind="permission",
                resource="permission_policy",
                locked_code="PERMISSION_LOCKED",
                not_found=permission_not_found,
                audit_view=_audit_view,
                get=self.permissions.get_permission_policy,
                remove=self.permissions.delete_permission_policy,
                lock_keys=self.permissions.lock_permission_keys,
                find_locked=self.permissions.find_locked_permission_keys,
            ),
        )

    async def list_policies(
        self, principal: Principal, tenant_id: UUID
    ) -> list[PermissionPolicyRow]:
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            return await self.permissions.list_permission_policies(conn, tenant_id)

    async def get(self, principal: Principal, tenant_id: UUID, key: str) -> PermissionPolicyRow:
        async with reading_active_tenant(self.deps, principal, tenant_id) as conn:
            policy = await self.permissions.get_permission_policy(conn, tenant_id, key)
        if policy is None:
            raise permission_not_found(key)
        return policy

    async def put(
        self, principal: Principal, actor: Actor, tenant_id: UUID, key: str, body: PermissionPut
    ) -> tuple[PermissionPolicyRow, bool]:
        """Create or replace the policy; returns it and whether it was created."""

        async def work(conn: asyncpg.Connection) -> tuple[PermissionPolicyRow, bool]:
            node = await self.writes.lock_key(conn, principal, tenant_id, key)
            await self.writes.refuse_locked(conn, node, key)
            before = await self.permissions.get_permission_policy(conn, tenant_id, key)
            mode = (
                body.mode if body.mode is not UNSET else (before.mode if before else DEFAULT_MODE)
            )
            if (
                before is not None
                and before.value == body.value
                and before.mode == mode
                and before.expires_at == body.expires_at
            ):
                return before, False
            after = await self.permissions.upsert_permission_policy(
                conn, tenant_id, key, value=body.value, mode=mode, expires_at=body.expires_at
            )
            kind = "created" if before is None else "updated"
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action=f"permission.{kind}",
                    resource_type="permission_policy",
                    resource_id=key,
                    tenant_id=tenant_id,
                    changes={"before": _audit_view(before), "after": _audit_view(after)},
                ),
                [_event(kind, after)],
            )
            return after, before is None

        return await self.deps.db.transaction(work)

    async def delete(self, principal: Principal, actor: Actor, tenant_id: UUID, key: str) -> None:
        await self.writes.delete(principal, actor, tenant_id, key)
