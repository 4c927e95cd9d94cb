"""Rules every tenant use case applies: subtree visibility and the archived state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import RetryTransaction, ServiceError, tenant_archived, tenant_not_found
from service.base.etags import if_match_satisfied
from service.repositories.tenants import TenantNode, TenantRow, TenantsRepository
from service.usecases.common.deps import Deps
from service.views.base import etag
from service.views.tenants import Tenant


class HasPath(Protocol):
    @property
    def ancestry_path(self) -> str: ...
    @property
    def status(self) -> str: ...


N = TypeVar("N", bound=HasPath)


def visible(principal: Principal, node: N | None) -> N:
    """The node, or 404 when it does not exist or lies outside the caller's subtree."""
    if node is None or not principal.can_see_path(node.ancestry_path):
        raise tenant_not_found()
    return node


def active(node: N) -> N:
    if node.status == "archived":
        raise tenant_archived()
    return node


def visible_active(principal: Principal, node: N | None) -> N:
    return active(visible(principal, node))


async def lock_tree_of(
    conn: asyncpg.Connection, tenants: TenantsRepository, principal: Principal, tenant_id: UUID
) -> TenantNode:
    """The tenant (404 outside the caller's subtree) once its tree's root is locked
    exclusively, read again under the lock: a move to another tree before the lock
    restarts the transaction."""
    seen = visible(principal, (await tenants.get_tenant_nodes(conn, [tenant_id])).get(tenant_id))
    await tenants.lock_tree_roots_exclusive(conn, [seen.root_id])
    node = visible(principal, await tenants.get_tenant_node(conn, tenant_id))
    if node.root_id != seen.root_id:
        raise RetryTransaction  # moved to another tree before the lock
    return node


@asynccontextmanager
async def reading_active_tenant(
    deps: Deps, principal: Principal, tenant_id: UUID
) -> AsyncIterator[asyncpg.Connection]:
    """A read connection (a replica's when one may answer) on which the tenant was found
    visible to the caller and active: for reads of what a tenant holds."""
    async with deps.db.read_connection() as conn:
        visible_active(principal, await deps.repos.tenants.get_tenant(conn, tenant_id))
        yield conn


def check_if_match(if_match: str | None, tenant: TenantRow) -> None:
    if not if_match_satisfied(if_match, etag(Tenant.of(tenant))):
        raise ServiceError(
            "PRECONDITION_FAILED", "the tenant changed since it was read (If-Match is stale)"
        )


def root_denied() -> ServiceError:
    return ServiceError(
        "TENANT_ACCESS_DENIED", "a tenant-scoped caller cannot create or move root tenants"
    )
