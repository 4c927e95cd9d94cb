"""Rules every tenant use case applies: subtree visibility and the archived state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Protocol, TypeVar
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import ServiceError, tenant_archived, tenant_not_found
from service.base.etags import if_match_satisfied
from service.repositories.tenants import TenantRow
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
