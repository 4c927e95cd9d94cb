"""Reading the audit log: filtered keyset pages (newest first) and single entries.

A tenant-scoped caller sees the entries of its subtree only; entries without a tenant
(global keys, maintenance) or of tenants outside it answer as missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.repositories.audit_logs import AuditEntryRow, AuditFilter
from service.schemas.audit import AuditLogQuery
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible


@dataclass(frozen=True, slots=True)
class AuditPage:
    items: list[AuditEntryRow]
    next_cursor: UUID | None


def audit_log_not_found() -> ServiceError:
    return ServiceError("AUDIT_LOG_NOT_FOUND", "audit log entry not found")


class AuditQueries:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.audit = deps.repos.audit_logs
        self.tenants = deps.repos.tenants

    async def list_page(self, principal: Principal, query: AuditLogQuery) -> AuditPage:
        f = AuditFilter(
            action=query.action,
            resource_type=query.resource_type,
            actor_id=query.actor_id,
            created_from=query.from_,
            created_to=query.to,
        )
        fetch = query.limit + 1
        async with self.db.read_connection() as conn:
            if query.tenant_id is not None:
                if principal.is_scoped:
                    visible(principal, await self.tenants.get_tenant_node(conn, query.tenant_id))
                # A global caller may ask for a tenant that no longer exists: a purged
                # tenant's entries stay, redacted.
                rows = await self.audit.list_tenant_audit_logs(
                    conn, query.tenant_id, f, cursor=query.cursor, limit=fetch
                )
            elif principal.tenant_id is not None:
                rows = await self.audit.list_subtree_audit_logs(
                    conn, principal.tenant_id, f, cursor=query.cursor, limit=fetch
                )
            else:
                rows = await self.audit.list_audit_logs(conn, f, cursor=query.cursor, limit=fetch)
        if len(rows) > query.limit:
            return AuditPage(rows[: query.limit], rows[query.limit - 1].id)
        return AuditPage(rows, None)

    async def get(self, principal: Principal, entry_id: UUID) -> AuditEntryRow:
        found = await self.db.read(lambda c: self.audit.get_audit_log(c, entry_id))
        if found is None:
            raise audit_log_not_found()
        entry, path = found
        if principal.is_scoped and (path is None or not principal.can_see_path(path)):
            raise audit_log_not_found()
        return entry
