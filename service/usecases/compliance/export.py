"""GDPR export: one consistent document with everything held about one tenant.

Read in one repeatable-read transaction (a single snapshot) that also writes the
tenant.exported audit entry. Sensitive config values stay masked unless the caller asks
for them (revealed as the config endpoints reveal them); webhook secrets and key hashes
are never exported.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.base.timefmt import iso, utcnow
from service.repositories.api_keys import StoredKey
from service.repositories.audit_logs import AuditFilter
from service.repositories.config_entries import ConfigEntryRow
from service.usecases.common.deps import Deps
from service.usecases.common.recording import tenant_audit
from service.usecases.common.tenant_access import visible
from service.usecases.entries.values import shown_value
from service.views.compliance import AuditEntry, Consent, ExportedChild, TenantExport
from service.views.entries import ConfigEntry, PermissionPolicy
from service.views.keys import ApiKey, Role
from service.views.tenants import Tenant
from service.views.webhooks import Webhook

FORMAT_VERSION = 1
KEY_PAGE = 1000


class TenantExports:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repos = deps.repos

    def _shown(self, entry: ConfigEntryRow, reveal: bool) -> Any:
        # A value no configured key opens is a server fault (500), as on the config endpoints.
        return shown_value(self.deps.keyring.encryptor, entry, entry.tenant_id, reveal)

    async def _all_keys(self, conn: asyncpg.Connection, tenant_id: UUID) -> list[StoredKey]:
        """Every key of the tenant, revoked ones included, a keyset page at a time."""
        keys: list[StoredKey] = []
        cursor: UUID | None = None
        while True:
            page = await self.repos.api_keys.list_api_keys(
                conn, tenant_id=tenant_id, subtree_of=None, include_revoked=True,
                cursor=cursor, limit=KEY_PAGE,
            )  # fmt: skip
            keys += page
            if len(page) < KEY_PAGE:
                return keys
            cursor = page[-1].key.id

    async def export(
        self, principal: Principal, actor: Actor, tenant_id: UUID, *, include_secrets: bool
    ) -> TenantExport:
        repos = self.repos

        async def work(conn: asyncpg.Connection) -> TenantExport:
            tenant = visible(principal, await repos.tenants.get_tenant(conn, tenant_id))
            entries = await repos.config.list_config_entries(conn, tenant_id)
            config = [ConfigEntry.of(e, self._shown(e, include_secrets)) for e in entries]
            tenant_view = Tenant.of(tenant)
            tenant_view.config = {c.key: c.value for c in config}
            audit = await repos.audit_logs.list_tenant_audit_logs(
                conn, tenant_id, AuditFilter(), cursor=None, limit=None
            )
            permissions = await repos.permissions.list_permission_policies(conn, tenant_id)
            consents = await repos.consents.list_consents(conn, tenant_id)
            webhooks = await repos.webhooks.list_webhooks(conn, scope=None, tenant_id=tenant_id)
            keys = await self._all_keys(conn, tenant_id)
            roles = await repos.roles.list_roles(conn, tenant_id=tenant_id, subtree_of=None)
            children = await repos.tenants.list_children(conn, tenant_id, status="all")
            view = TenantExport(
                format_version=FORMAT_VERSION,
                exported_at=iso(utcnow()),
                tenant=tenant_view,
                config=config,
                permissions=[PermissionPolicy.of(p) for p in permissions],
                consents=[Consent.of(c) for c in consents],
                audit_logs=[AuditEntry.of(e) for e in audit],
                # A webhook's view never carries the secret (only create and rotate answers do)
                webhooks=[Webhook.of(w) for w in webhooks],
                api_keys=[ApiKey.of(k) for k in keys],
                roles=[Role.of(r) for r in roles],
                children=[
                    ExportedChild(id=c.id, slug=c.slug, name=c.name, status=c.status)  # type: ignore[arg-type]
                    for c in children
                ],
            )
            await self.deps.recorder.record(
                conn,
                actor,
                tenant_audit(
                    "tenant.exported",
                    tenant_id,
                    changes={"include_secrets": include_secrets},
                ),
            )
            return view

        return await self.deps.db.transaction(work, isolation="repeatable_read")
