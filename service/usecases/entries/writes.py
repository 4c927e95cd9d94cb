"""The write path config entries and permission policies share: locking, refusal under
an ancestor's lock, and delete. Each kind describes its own storage in an EntryStore.

A write takes its tree root FOR SHARE (as creates do, so no move rewrites the chain of
ancestors meanwhile), then the tenant FOR SHARE (so no archive runs meanwhile), then the
key locks along its line of descent: the key at the tenant exclusively and at each
ancestor shared (sql/queries/key_locks.sql, lock_entry_keys). A write below cannot
slip past an ancestor that is locking the key at the same moment, because the two take
turns and whichever comes second sees the other's committed row; writes at siblings,
which cannot affect each other, do not wait.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, RetryTransaction, ServiceError
from service.repositories.key_locks import KeyWrite
from service.repositories.tenants import TenantNode, TenantsRepository
from service.usecases.common.deps import Deps
from service.usecases.common.protection import refuse_protected
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.common.tenant_access import active, visible

E = TypeVar("E")


async def lock_tenant_for_entries(
    conn: asyncpg.Connection, tenants: TenantsRepository, principal: Principal, tenant_id: UUID
) -> TenantNode:
    """The tenant, share-locked with its tree root; 404 outside the subtree, 410 archived."""
    locked = await tenants.lock_tenant_and_root_shared(conn, tenant_id)
    node = visible(principal, locked.get(tenant_id))
    if node.root_id not in locked:
        raise RetryTransaction  # moved to another tree before the lock
    return active(node)


def key_locked(code: str, what: str, key: str, holder: UUID) -> ServiceError:
    return ServiceError(
        code,
        f"{what} key {key!r} is locked by ancestor {holder}",
        details=[FieldError("key", "locked by an ancestor")],
    )


@dataclass(frozen=True, slots=True)
class EntryStore(Generic[E]):
    """How one kind of entry is stored, named and audited."""

    kind: str  # "config" or "permission": event and audit action prefix, error wording
    resource: str  # the audit entry's resource type
    locked_code: str  # the error code of a write refused under an ancestor's lock
    not_found: Callable[[str], ServiceError]
    audit_view: Callable[[E | None], dict[str, Any] | None]
    get: Callable[[asyncpg.Connection, UUID, str], Awaitable[E | None]]
    remove: Callable[[asyncpg.Connection, UUID, str], Awaitable[E | None]]
    lock_keys: Callable[[asyncpg.Connection, Sequence[KeyWrite]], Awaitable[None]]
    find_locked: Callable[[asyncpg.Connection, UUID, Sequence[str]], Awaitable[dict[str, UUID]]]
    # What must still hold once the entry is gone (config: the budgets it feeds).
    after_remove: Callable[[asyncpg.Connection, TenantNode, str], Awaitable[None]] | None = None


class EntryWrites(Generic[E]):
    def __init__(self, deps: Deps, store: EntryStore[E]) -> None:
        self.deps = deps
        self.store = store

    async def lock_key(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        tenant_id: UUID,
        key: str,
        *,
        check_protection: bool = True,
    ) -> TenantNode:
        """The tenant locked for entry writes, then the key at it and above it. Without
        check_protection the caller reads the protection itself, under the key locks."""
        node = await lock_tenant_for_entries(conn, self.deps.repos.tenants, principal, tenant_id)
        if check_protection:
            await refuse_protected(conn, self.deps.repos.protection, [tenant_id])
        await self.store.lock_keys(conn, [KeyWrite(node.ancestry_path, key)])
        return node

    async def refuse_locked(self, conn: asyncpg.Connection, node: TenantNode, key: str) -> None:
        """409 when an ancestor of the tenant holds the key locked."""
        if node.parent_id is None:
            return
        locked = await self.store.find_locked(conn, node.parent_id, [key])
        if key in locked:
            raise key_locked(self.store.locked_code, self.store.kind, key, locked[key])

    async def delete(self, principal: Principal, actor: Actor, tenant_id: UUID, key: str) -> None:
        store = self.store

        async def work(conn: asyncpg.Connection) -> None:
            node = await self.lock_key(conn, principal, tenant_id, key)
            if await store.get(conn, tenant_id, key) is None:
                raise store.not_found(key)
            # Removing a key is a write too: refused under an ancestor's lock, as PUT and PATCH are.
            await self.refuse_locked(conn, node, key)
            before = await store.remove(conn, tenant_id, key)
            if before is None:
                raise store.not_found(key)
            if store.after_remove is not None:
                await store.after_remove(conn, node, key)
            action = f"{store.kind}.deleted"
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action=action,
                    resource_type=store.resource,
                    resource_id=key,
                    tenant_id=tenant_id,
                    changes={"before": store.audit_view(before), "after": None},
                ),
                [Event(action, tenant_id, {"tenant_id": str(tenant_id), "key": key})],
            )

        await self.deps.db.transaction(work)
