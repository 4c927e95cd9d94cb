"""Moving a tenant (and by default its subtree) to another data-residency region.

Runs under the tree root's exclusive lock, as a move does, so no create or move in that
tree interleaves: every tenant of the subtree, children created a moment ago included,
ends in the new region. Emits tenant.updated (changed_fields ["region"]) per migrated
tenant and one tenant.region_migrated audit entry for the request.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import FieldError, ServiceError
from service.schemas.tenant_admin import MigrateRegionBody
from service.usecases.common.deps import Deps
from service.usecases.common.recording import Event, tenant_audit
from service.usecases.common.tenant_access import active, lock_tree_of
from service.views.base import document
from service.views.tenants import Tenant


@dataclass(frozen=True, slots=True)
class RegionMigrationOutcome:
    tenant_id: UUID
    from_region: str
    to_region: str
    tenants_migrated: int


class RegionMigrations:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.regions = deps.settings.regions

    async def migrate(
        self, principal: Principal, actor: Actor, tenant_id: UUID, body: MigrateRegionBody
    ) -> RegionMigrationOutcome:
        if body.region not in self.regions:
            message = f"unknown region; one of {', '.join(self.regions)}"
            raise ServiceError(
                "VALIDATION_ERROR", f"region: {message}", details=[FieldError("region", message)]
            )

        async def work(conn: asyncpg.Connection) -> RegionMigrationOutcome:
            node = active(await lock_tree_of(conn, self.tenants, principal, tenant_id))
            if node.region == body.region:
                raise ServiceError(
                    "ALREADY_IN_REGION", f"the tenant is already in region {body.region!r}"
                )
            changed = await self.deps.repos.regions.migrate_tenant_regions(
                conn, tenant_id, body.region, include_descendants=body.include_descendants
            )
            migrated = await self.tenants.get_tenants_by_ids(conn, changed)
            ordered = sorted(migrated.values(), key=lambda t: t.ancestry_path)
            await self.deps.recorder.record(
                conn,
                actor,
                tenant_audit(
                    "tenant.region_migrated",
                    tenant_id,
                    changes={
                        "before": {"region": node.region},
                        "after": {"region": body.region},
                        "include_descendants": body.include_descendants,
                        "tenants_migrated": len(changed),
                    },
                ),
                [
                    Event(
                        "tenant.updated",
                        t.id,
                        {**document(Tenant.of(t)), "changed_fields": ["region"]},
                    )
                    for t in ordered
                ],
            )
            return RegionMigrationOutcome(tenant_id, node.region, body.region, len(changed))

        return await self.deps.db.transaction(work)
