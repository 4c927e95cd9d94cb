"""Running a change request's list: every change through the use case a direct write
uses (the same locks, rules, audit entries and events), all in ONE transaction.

The list runs inside a held transaction (service/db/held.py): the first use case's
transaction stays open and each later one becomes a savepoint in it, so the whole list
commits once (one revision) or not at all. A preview runs the same way and rolls back.
Around the changes, the contexts of every tenant at or below a changed one are rendered
before and after, in that same transaction: their difference is the impact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

import asyncpg
from msgspec import UNSET

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, ServiceError
from service.db.held import HeldTransaction, holding
from service.schemas.change_requests import (
    Change,
    ConfigDeleteChange,
    ConfigSetChange,
    PermissionDeleteChange,
    PermissionSetChange,
    TenantArchiveChange,
    TenantMoveChange,
    TenantRestoreChange,
    TenantUpdateChange,
)
from service.schemas.config import ConfigPut, PermissionPut
from service.schemas.tenants import TenantPatch
from service.usecases.changes.impact import Snapshot, diff, parse
from service.usecases.common.deps import Deps
from service.usecases.common.protection import applying_change_request
from service.usecases.entries.config_entries import ConfigEntries
from service.usecases.entries.permissions import PermissionPolicies
from service.usecases.tenants.changes import TenantChanges
from service.usecases.tenants.moves import TenantMoves

T = TypeVar("T")
# Contexts rendered twice per preview or apply: past this many tenants a request is
# refused (split it) rather than hold its transaction for long.
MAX_IMPACT_TENANTS = 10_000
WHOLE_LIST_ATTEMPTS = 5


def changed_tenants(changes: Sequence[Change]) -> list[UUID]:
    """Every tenant a change names (its tenant and a move's new parent), in order."""
    seen: dict[UUID, None] = {}
    for change in changes:
        seen[change.tenant_id] = None
        if isinstance(change, TenantMoveChange) and change.new_parent_id is not None:
            seen[change.new_parent_id] = None
    return list(seen)


class ChangeExecution:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.config = ConfigEntries(deps)
        self.permissions = PermissionPolicies(deps)
        self.tenant_changes = TenantChanges(deps)
        self.moves = TenantMoves(deps)

    async def in_one_transaction(
        self,
        work: Callable[[], Awaitable[T]],
        *,
        commit: bool,
        on_begin: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
    ) -> T:
        """Run work with every transaction it opens joined into one REPEATABLE READ
        transaction, then commit it (commit=True) or roll it back. One snapshot for the
        whole list: the contexts measured before and after the changes differ by these
        changes only, never by another transaction that commits meanwhile (which would
        show as drift). A write that meets such a commit fails to serialize and the whole
        list runs again. Writes inside are a change request's: protected subtrees let
        them by."""

        async def begin(conn: asyncpg.Connection) -> None:
            if on_begin is not None:
                await on_begin(conn)

        db = self.deps.db
        for attempt in range(1, WHOLE_LIST_ATTEMPTS + 1):
            held = HeldTransaction(begin)
            with holding(held), applying_change_request():
                try:
                    await db.transaction(_nothing, isolation="repeatable_read")
                    result = await work()
                except (asyncpg.SerializationError, asyncpg.DeadlockDetectedError):
                    await db.settle_held(held, None)
                    if attempt == WHOLE_LIST_ATTEMPTS:
                        raise
                    await asyncio.sleep(0.02 * attempt)
                    continue
                except BaseException:
                    await db.settle_held(held, None)
                    raise
                await db.settle_held(held, _nothing if commit else None)
            return result
        raise AssertionError("unreachable")

    async def run_measured(
        self, principal: Principal, actor: Actor, changes: Sequence[Change]
    ) -> list[dict[str, Any]]:
        """Inside in_one_transaction: the changes, and their impact."""
        candidates = await self.deps.db.transaction(lambda c: self._candidates(c, changes))
        before = await self.deps.db.transaction(lambda c: self._snapshots(c, candidates))
        for index, change in enumerate(changes):
            await self._run(principal, actor, index, change)
        after = await self.deps.db.transaction(lambda c: self._snapshots(c, candidates))
        return diff(before, after)

    async def preview(
        self, principal: Principal, actor: Actor, changes: Sequence[Change]
    ) -> list[dict[str, Any]]:
        """The impact of the list now, nothing kept."""
        return await self.in_one_transaction(
            lambda: self.run_measured(principal, actor, changes), commit=False
        )

    async def _candidates(self, conn: asyncpg.Connection, changes: Sequence[Change]) -> list[UUID]:
        ids = await self.deps.repos.change_requests.list_subtree_tenant_ids(
            conn, [c.tenant_id for c in changes], MAX_IMPACT_TENANTS + 1
        )
        if len(ids) > MAX_IMPACT_TENANTS:
            raise ServiceError(
                "VALIDATION_ERROR",
                f"the changes reach more than {MAX_IMPACT_TENANTS} tenants; split the request",
                details=[FieldError("changes", "too many tenants to preview")],
            )
        return ids

    async def _snapshots(
        self, conn: asyncpg.Connection, tenant_ids: list[UUID]
    ) -> dict[UUID, Snapshot]:
        rendered = await self.deps.repos.context.render_tenant_contexts(conn, tenant_ids)
        return {r.id: Snapshot(parse(r.document), r.status) for r in rendered}

    async def _run(self, principal: Principal, actor: Actor, index: int, change: Change) -> None:
        try:
            await self._dispatch(principal, actor, change)
        except ServiceError as exc:
            raise ServiceError(
                exc.code,
                f"change {index} ({_op(change)} at {change.tenant_id}): {exc.message}",
                details=[FieldError(f"changes[{index}]", exc.message), *exc.details],
                headers=exc.headers,
            ) from exc
        except ValueError as exc:  # a body the change's own schema refuses now
            raise ServiceError(
                "VALIDATION_ERROR",
                f"change {index} ({_op(change)} at {change.tenant_id}): {exc}",
                details=[FieldError(f"changes[{index}]", str(exc))],
            ) from exc

    async def _dispatch(self, principal: Principal, actor: Actor, change: Change) -> None:
        tenant = change.tenant_id
        match change:
            case ConfigSetChange():
                body = ConfigPut(
                    value=change.value,
                    locked=change.locked,
                    sensitive=change.sensitive,
                    expires_at=change.expires_at,
                )
                await self.config.put(principal, actor, tenant, change.key, body)
            case ConfigDeleteChange():
                await self.config.delete(principal, actor, tenant, change.key)
            case PermissionSetChange():
                policy = PermissionPut(
                    value=change.value, mode=change.mode, expires_at=change.expires_at
                )
                await self.permissions.put(principal, actor, tenant, change.key, policy)
            case PermissionDeleteChange():
                await self.permissions.delete(principal, actor, tenant, change.key)
            case TenantMoveChange():
                await self.moves.move(principal, actor, tenant, change.new_parent_id, if_match=None)
            case TenantUpdateChange():
                patch = TenantPatch(name=change.name, slug=change.slug, metadata=change.metadata)
                await self.tenant_changes.update(principal, actor, tenant, patch, if_match=None)
            case TenantArchiveChange():
                await self.tenant_changes.archive(principal, actor, tenant, if_match=None)
            case TenantRestoreChange():
                await self.tenant_changes.restore(principal, actor, tenant)


def _op(change: Change) -> str:
    tag: str = type(change).__struct_config__.tag  # type: ignore[assignment]
    return tag


async def _nothing(conn: asyncpg.Connection) -> None:
    return None


__all__ = ["UNSET", "ChangeExecution", "changed_tenants"]
