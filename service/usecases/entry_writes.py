"""Locking for writes of config entries and permission policies.

A write takes its tree root FOR SHARE (as creates do, so no move rewrites the chain of
ancestors meanwhile), then the tenant FOR SHARE (so no archive runs meanwhile), then a
(tree root, key) transaction lock. That last lock serializes writes of the same key in
one tree: a write below cannot slip past an ancestor that is locking the key at the
same moment, because whichever comes second sees the other's committed row.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.errors import FieldError, RetryTransaction, ServiceError
from service.repositories.tenants import TenantNode, TenantsRepository
from service.usecases.tenant_access import active, visible


async def lock_tenant_for_entries(
    conn: asyncpg.Connection, tenants: TenantsRepository, principal: Principal, tenant_id: UUID
) -> TenantNode:
    """The tenant, share-locked with its tree root; 404 outside the subtree, 410 archived."""
    seen = visible(principal, (await tenants.get_tenant_nodes(conn, [tenant_id])).get(tenant_id))
    await tenants.lock_tree_roots_shared(conn, [seen.root_id])
    node = visible(
        principal, (await tenants.lock_tenant_nodes_shared(conn, [tenant_id])).get(tenant_id)
    )
    if node.root_id != seen.root_id:
        raise RetryTransaction  # moved to another tree before the lock
    return active(node)


def key_locked(code: str, what: str, key: str, holder: UUID) -> ServiceError:
    return ServiceError(
        code,
        f"{what} key {key!r} is locked by ancestor {holder}",
        details=[FieldError("key", "locked by an ancestor")],
    )
