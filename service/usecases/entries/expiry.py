"""Expiring overrides: config entries and permission policies removed at their
expires_at, as deletes by the service (docs/change-requests.md, "Expiring overrides").

Each round is one transaction that claims due rows with FOR UPDATE SKIP LOCKED and
deletes them, with their audit entries (`config.expired`, `permission.expired`) and
their delete events: several processes may run rounds at once and each row goes once.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from service.auth.principal import SYSTEM_ACTOR
from service.base.timefmt import iso
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord, Event
from service.views.base import SENSITIVE_MASK

BATCH_SIZE = 100


class EntryExpiry:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.config = deps.repos.config
        self.permissions = deps.repos.permissions

    async def expire_due(self, batch_size: int = BATCH_SIZE) -> int:
        """Remove one batch of each kind that is due; how many entries went."""

        async def work(conn: asyncpg.Connection) -> int:
            entries = await self.config.delete_expired_config_entries(conn, batch_size)
            policies = await self.permissions.delete_expired_permission_policies(conn, batch_size)
            audits: list[AuditRecord] = []
            events: list[Event] = []
            for e in entries:
                before: dict[str, Any] = {
                    "value": SENSITIVE_MASK if e.sensitive else e.value,
                    "locked": e.locked,
                    "sensitive": e.sensitive,
                    "reveal_to_descendants": e.reveal_to_descendants,
                }
                audits.append(_expired("config", "config_entry", e.tenant_id, e.key, before,
                                       e.expires_at))  # fmt: skip
                events.append(_deleted("config", e.tenant_id, e.key))
            for p in policies:
                before = {"value": p.value, "mode": p.mode}
                audits.append(_expired("permission", "permission_policy", p.tenant_id, p.key,
                                       before, p.expires_at))  # fmt: skip
                events.append(_deleted("permission", p.tenant_id, p.key))
            if audits:
                await self.deps.recorder.record(conn, SYSTEM_ACTOR, audits, events)
            return len(audits)

        return await self.deps.db.transaction(work)


def _expired(
    kind: str, resource: str, tenant_id: Any, key: str, before: dict[str, Any], at: Any
) -> AuditRecord:
    return AuditRecord(
        action=f"{kind}.expired",
        resource_type=resource,
        resource_id=key,
        tenant_id=tenant_id,
        changes={"before": {**before, "expires_at": iso(at)}, "after": None},
    )


def _deleted(kind: str, tenant_id: Any, key: str) -> Event:
    return Event(f"{kind}.deleted", tenant_id, {"tenant_id": str(tenant_id), "key": key})
