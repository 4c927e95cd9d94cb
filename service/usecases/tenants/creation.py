"""Creating tenants, one or a batch, atomically.

A batch is all or nothing: every item is checked (shape, parent, archived parent,
depth, slug, locked config keys) and when any fails nothing is written and every
failing item is reported with its index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, RetryTransaction, ServiceError
from service.base.ids import uuid7
from service.repositories.key_locks import KeyWrite
from service.repositories.tenants import NewTenant, TenantNode, TenantRow
from service.schemas.tenants import TenantCreate
from service.usecases.common.deps import Deps
from service.usecases.common.recording import Event, tenant_audit
from service.usecases.entries.constraints import ConfigConstraints, Written
from service.views.base import document, opt_str
from service.views.tenants import Tenant

DEFAULT_ISOLATION = "SHARED_RLS"


@dataclass(frozen=True, slots=True)
class ItemError:
    index: int
    code: str
    message: str
    field: str | None = None

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"index": self.index, "code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return body

    def as_service_error(self) -> ServiceError:
        details = [FieldError(self.field, self.message)] if self.field else []
        return ServiceError(self.code, self.message, details=details)


class BatchRejected(Exception):
    def __init__(self, errors: Sequence[ItemError]) -> None:
        super().__init__("batch rejected")
        self.errors = sorted(errors, key=lambda e: e.index)


def batch_error(errors: Sequence[ItemError], total: int) -> ServiceError:
    all_conflicts = all(e.code == "CONFLICT" for e in errors)
    bad = len({e.index for e in errors})
    return ServiceError(
        "CONFLICT" if all_conflicts else "VALIDATION_ERROR",
        f"{bad} of {total} tenants cannot be created; nothing was created",
        extra={"created": [], "errors": [e.as_dict() for e in errors]},
    )


def created_event(t: NewTenant) -> Event:
    return Event(
        "tenant.created",
        t.id,
        {
            "id": str(t.id),
            "name": t.name,
            "slug": t.slug,
            "parent_id": opt_str(t.parent_id),
            "isolation_strategy": t.isolation_strategy,
            "ancestry_path": t.ancestry_path,
            "depth": t.depth,
        },
    )


class TenantCreation:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.config = deps.repos.config
        self.constraints = ConfigConstraints(deps)
        self.max_depth = deps.settings.max_tenant_depth
        self.default_region = deps.settings.default_region

    async def create(self, principal: Principal, actor: Actor, body: TenantCreate) -> TenantRow:
        try:
            return (await self.create_many(principal, actor, [body]))[0]
        except BatchRejected as rejected:
            raise rejected.errors[0].as_service_error() from None

    async def create_many(
        self,
        principal: Principal,
        actor: Actor,
        items: Sequence[TenantCreate | ItemError],
    ) -> list[TenantRow]:
        """Create every item or none; raises BatchRejected listing each bad item."""
        shape_errors = [item for item in items if isinstance(item, ItemError)]
        bodies = [(i, item) for i, item in enumerate(items) if isinstance(item, TenantCreate)]

        async def work(conn: asyncpg.Connection) -> list[TenantRow]:
            errors = list(shape_errors)
            parents = await self._lock_parents(conn, [b.parent_id for _, b in bodies])
            errors += await self._check(conn, principal, bodies, parents)
            if errors:
                raise BatchRejected(errors)
            new = [self._new_tenant(body, parents) for _, body in bodies]
            written = [
                Written(t.id, t.parent_id, b.config or {})
                for t, (_, b) in zip(new, bodies, strict=True)
            ]
            budgets = await self.constraints.lock_budgets(conn, written)
            await self.tenants.insert_tenants(conn, new)
            await self.config.insert_config_for_new_tenants(
                conn,
                [
                    (t.id, key, value)
                    for t, (_, b) in zip(new, bodies, strict=True)
                    for key, value in (b.config or {}).items()
                ],
            )
            if budgets:
                await self.constraints.check_budgets(
                    conn, written, sorted({k for w in written for k in w.values})
                )
            created = await self.tenants.get_tenants_by_ids(conn, [t.id for t in new])
            await self.deps.recorder.record(
                conn,
                actor,
                [
                    tenant_audit(
                        "tenant.created",
                        t.id,
                        changes={"before": None, "after": document(Tenant.of(created[t.id]))},
                    )
                    for t in new
                ],
                [created_event(t) for t in new],
            )
            return [created[t.id] for t in new]

        return await self.deps.db.transaction(work)

    async def _lock_parents(
        self, conn: asyncpg.Connection, parent_ids: Sequence[UUID | None]
    ) -> dict[UUID, TenantNode]:
        """Lock the trees, then the parents, so no move rewrites their paths meanwhile."""
        wanted = sorted({p for p in parent_ids if p is not None})
        if not wanted:
            return {}
        seen = await self.tenants.get_tenant_nodes(conn, wanted)
        await self.tenants.lock_tree_roots_shared(conn, sorted({n.root_id for n in seen.values()}))
        locked = await self.tenants.lock_tenant_nodes_shared(conn, wanted)
        if any(seen[i].root_id != node.root_id for i, node in locked.items() if i in seen):
            raise RetryTransaction  # a parent moved to another tree before the lock
        return locked

    async def _check(
        self,
        conn: asyncpg.Connection,
        principal: Principal,
        bodies: Sequence[tuple[int, TenantCreate]],
        parents: dict[UUID, TenantNode],
    ) -> list[ItemError]:
        errors: dict[int, ItemError] = {}
        first_index: dict[str, int] = {}
        for index, body in bodies:
            if body.slug in first_index:
                errors[index] = ItemError(
                    index, "CONFLICT",
                    f"slug {body.slug!r} appears twice in this batch (first at index "
                    f"{first_index[body.slug]})", "slug",
                )  # fmt: skip
                continue
            first_index[body.slug] = index
            error = self._check_parent(index, body, principal, parents)
            if error is not None:
                errors[index] = error
        taken = await self.tenants.find_existing_slugs(conn, [b.slug for _, b in bodies])
        for index, body in bodies:
            if index not in errors and body.slug in taken:
                errors[index] = ItemError(
                    index, "CONFLICT", f"a tenant with slug {body.slug!r} already exists", "slug"
                )
        # Key locks first (see usecases/entries/writes.py): an ancestor locking one of these
        # keys at this moment is then seen, never missed.
        await self.config.lock_config_keys(
            conn,
            [
                KeyWrite(parents[body.parent_id].ancestry_path, key, exclusive=False)
                for index, body in bodies
                if index not in errors and body.parent_id is not None and body.config
                for key in body.config
            ],
        )
        for index, body in bodies:
            if index in errors or body.parent_id is None or not body.config:
                continue
            locked = await self.config.find_locked_config_keys(
                conn, body.parent_id, list(body.config)
            )
            if locked:
                key = sorted(locked)[0]
                errors[index] = ItemError(
                    index, "CONFIG_LOCKED",
                    f"config key {key!r} is locked by ancestor {locked[key]}", f"config.{key}",
                )  # fmt: skip
                continue
            refused = await self.constraints.schema_refusals(
                conn, body.parent_id, body.parent_id, body.config
            )
            if refused:
                first = refused[0]
                errors[index] = ItemError(
                    index, "CONFIG_SCHEMA_VIOLATION",
                    f"config key {first.key!r} breaks the schema declared at tenant "
                    f"{first.schema_tenant_id} ({first.schema_path}): {first.message}",
                    f"config.{first.key}",
                )  # fmt: skip
        return list(errors.values())

    def _check_parent(
        self,
        index: int,
        body: TenantCreate,
        principal: Principal,
        parents: dict[UUID, TenantNode],
    ) -> ItemError | None:
        if body.parent_id is None:
            if principal.is_scoped:
                return ItemError(
                    index, "TENANT_ACCESS_DENIED",
                    "a tenant-scoped caller cannot create root tenants", "parent_id",
                )  # fmt: skip
            return None
        parent = parents.get(body.parent_id)
        if parent is None or not principal.can_see_path(parent.ancestry_path):
            return ItemError(index, "TENANT_NOT_FOUND", "parent tenant not found", "parent_id")
        if parent.is_archived:
            return ItemError(index, "TENANT_ARCHIVED", "parent tenant is archived", "parent_id")
        if parent.depth + 1 > self.max_depth:
            return ItemError(
                index, "DEPTH_LIMIT_EXCEEDED",
                f"a tenant at depth {parent.depth + 1} would exceed MAX_TENANT_DEPTH "
                f"({self.max_depth})", "parent_id",
            )  # fmt: skip
        return None

    def _new_tenant(self, body: TenantCreate, parents: dict[UUID, TenantNode]) -> NewTenant:
        tenant_id = uuid7()
        parent = parents[body.parent_id] if body.parent_id is not None else None
        return NewTenant(
            id=tenant_id,
            parent_id=body.parent_id,
            name=body.name,
            slug=body.slug,
            ancestry_path=f"{parent.ancestry_path if parent else ''}/{tenant_id}",
            depth=parent.depth + 1 if parent else 0,
            metadata=body.metadata or {},
            isolation_strategy=body.isolation_strategy
            or (parent.isolation_strategy if parent else DEFAULT_ISOLATION),
            region=parent.region if parent else self.default_region,
        )
