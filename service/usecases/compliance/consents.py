"""Consent records: grant (idempotent while one is active), list, revoke; all audited."""

from __future__ import annotations

from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.errors import ServiceError, validation_error
from service.base.ids import uuid7
from service.base.timefmt import utcnow
from service.repositories.consents import ConsentRow, NewConsent
from service.schemas.consents import ConsentGrant
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord
from service.usecases.common.tenant_access import visible_active
from service.views.base import document
from service.views.compliance import Consent


def consent_not_found(purpose: str) -> ServiceError:
    return ServiceError("CONSENT_NOT_FOUND", f"no active consent for purpose {purpose!r}")


class Consents:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.tenants = deps.repos.tenants
        self.consents = deps.repos.consents

    async def _lock(
        self, conn: asyncpg.Connection, principal: Principal, tenant_id: UUID, purpose: str
    ) -> None:
        # A share lock on the tenant row keeps an archive or purge from interleaving; the
        # advisory lock serializes writers of this one purpose.
        nodes = await self.tenants.lock_tenant_nodes_shared(conn, [tenant_id])
        visible_active(principal, nodes.get(tenant_id))
        await self.consents.lock_consent_purpose(conn, tenant_id, purpose)

    async def grant(
        self, principal: Principal, actor: Actor, tenant_id: UUID, body: ConsentGrant
    ) -> tuple[ConsentRow, bool]:
        """The new record and True, or the active record for the purpose and False."""
        if body.expires_at is not None and body.expires_at <= utcnow():
            raise validation_error("expires_at", "must be in the future")

        async def work(conn: asyncpg.Connection) -> tuple[ConsentRow, bool]:
            await self._lock(conn, principal, tenant_id, body.purpose)
            active = await self.consents.get_active_consent(conn, tenant_id, body.purpose)
            if active is not None:
                return active, False
            consent_id = uuid7()
            await self.consents.insert_consent(
                conn,
                NewConsent(
                    id=consent_id,
                    tenant_id=tenant_id,
                    purpose=body.purpose,
                    granted_by=actor.actor_id,
                    expires_at=body.expires_at,
                    metadata=body.metadata or {},
                ),
            )
            created = await self.consents.get_consent(conn, consent_id)
            assert created is not None
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action="consent.granted",
                    resource_type="consent",
                    resource_id=consent_id,
                    tenant_id=tenant_id,
                    changes={"before": None, "after": document(Consent.of(created))},
                ),
            )
            return created, True

        return await self.deps.db.transaction(work)

    async def revoke(
        self, principal: Principal, actor: Actor, tenant_id: UUID, purpose: str
    ) -> None:
        async def work(conn: asyncpg.Connection) -> None:
            await self._lock(conn, principal, tenant_id, purpose)
            active = await self.consents.get_active_consent(conn, tenant_id, purpose)
            if active is None:
                raise consent_not_found(purpose)
            await self.consents.revoke_consent(conn, active.id, actor.actor_id)
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action="consent.revoked",
                    resource_type="consent",
                    resource_id=active.id,
                    tenant_id=tenant_id,
                    changes={
                        "before": {"status": "granted"},
                        "after": {"status": "revoked", "revoked_by": actor.actor_id},
                    },
                ),
            )

        await self.deps.db.transaction(work)

    async def history(
        self, principal: Principal, tenant_id: UUID, *, purpose: str | None
    ) -> list[ConsentRow]:
        async with self.deps.db.read_connection() as conn:
            visible_active(principal, await self.tenants.get_tenant_node(conn, tenant_id))
            return await self.consents.list_consents(conn, tenant_id, purpose=purpose)
