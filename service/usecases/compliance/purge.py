"""GDPR purge: hard-delete a tenant (and, with cascade, its subtree) under the tree
root's exclusive lock, as a move takes it."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError, validation_error
from service.caches.key_cache import KeyCache
from service.repositories.gdpr import PurgedRows
from service.schemas.tenant_admin import PurgeBody
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import lock_tree_of
from service.usecases.compliance.purging import (
    forget_credentials,
    purge_tenant_rows,
    purged_record,
)


@dataclass(frozen=True, slots=True)
class PurgeOutcome:
    tenant_id: UUID
    purged: PurgedRows

    @property
    def counts(self) -> dict[str, int]:
        return self.purged.counts


class TenantPurge:
    def __init__(self, deps: Deps, cache: KeyCache) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.cache = cache

    async def purge(
        self, principal: Principal, actor: Actor, tenant_id: UUID, body: PurgeBody
    ) -> PurgeOutcome:
        async def work(conn: asyncpg.Connection) -> PurgeOutcome:
            await lock_tree_of(conn, self.tenants, principal, tenant_id)
            tenant = await self.tenants.get_tenant(conn, tenant_id)
            assert tenant is not None
            if body.confirm != tenant.slug:
                raise validation_error("confirm", "must equal the tenant's slug")
            children = await self.tenants.list_children(conn, tenant_id, status="all", limit=1)
            if children and not body.cascade:
                raise ServiceError(
                    "HAS_CHILDREN",
                    "the tenant has children (archived ones count); purge them first or "
                    "send cascade: true",
                )
            ids = await self.deps.repos.gdpr.lock_subtree_for_purge(conn, tenant_id)
            purged = await purge_tenant_rows(conn, self.deps.repos, ids)
            # Only counts: the purged tenant's data must not survive in the log.
            changes = {"cascade": body.cascade, "counts": purged.counts}
            await self.deps.recorder.record(conn, actor, purged_record(tenant_id, changes))
            return PurgeOutcome(tenant_id, purged)

        result = await self.deps.db.transaction(work)
        forget_credentials(self.cache, result.purged)
        return result
