"""GDPR export: one consistent document with everything held about one tenant.

Read in one repeatable-read transaction (a single snapshot) that also writes the
tenant.exported audit entry. Sensitive config values stay masked unless the caller asks
for them; webhook secrets and key hashes are never exported.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
import orjson

from service.auth.principal import Actor, Principal
from service.crypto import PURPOSE_CONFIG, DecryptionError, config_aad
from service.logs import get_logger
from service.repositories.audit_logs import AuditFilter
from service.repositories.config_entries import ConfigEntry
from service.representations import SENSITIVE_MASK, api_key_json, tenant_json
from service.representations_gdpr import (
    audit_entry_json,
    consent_json,
    exported_webhook_json,
    permission_json,
    role_json,
)
from service.timefmt import iso, utcnow
from service.usecases.deps import Deps
from service.usecases.recording import AuditRecord
from service.usecases.tenant_access import visible

FORMAT_VERSION = 1
log = get_logger("service.export")


class TenantExport:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repos = deps.repos

    def _config_value(self, entry: ConfigEntry, reveal: bool) -> Any:
        if not entry.sensitive:
            return entry.value
        if not reveal or entry.encrypted_value is None:
            return SENSITIVE_MASK
        try:
            plain = self.deps.keyring.encryptor.decrypt(
                entry.encrypted_value,
                purpose=PURPOSE_CONFIG,
                aad=config_aad(entry.tenant_id, entry.key),
            )
        except DecryptionError:
            # Never the value or the ciphertext: only which entry could not be read.
            log.warning("sensitive value not decryptable", tenant_id=str(entry.tenant_id),
                        key=entry.key)  # fmt: skip
            return SENSITIVE_MASK
        return orjson.loads(plain)

    async def export(
        self, principal: Principal, actor: Actor, tenant_id: UUID, *, include_secrets: bool
    ) -> dict[str, Any]:
        repos = self.repos

        async def work(conn: asyncpg.Connection) -> dict[str, Any]:
            tenant = visible(principal, await repos.tenants.get_tenant(conn, tenant_id))
            entries = await repos.config.list_config_entries(conn, tenant_id)
            config = [
                {
                    "key": e.key,
                    "value": self._config_value(e, include_secrets),
                    "locked": e.locked,
                    "sensitive": e.sensitive,
                    "created_at": iso(e.created_at),
                    "updated_at": iso(e.updated_at),
                }
                for e in entries
            ]
            tenant_doc = tenant_json(tenant)
            tenant_doc["config"] = {c["key"]: c["value"] for c in config}
            audit = await repos.audit_logs.list_tenant_audit_logs(
                conn, tenant_id, AuditFilter(), cursor=None, limit=None
            )
            keys = await repos.gdpr.list_api_keys_for_export(conn, tenant_id)
            children = await repos.tenants.list_children(conn, tenant_id, status="all")
            document = {
                "format_version": FORMAT_VERSION,
                "exported_at": iso(utcnow()),
                "tenant": tenant_doc,
                "config": config,
                "permissions": [
                    permission_json(p)
                    for p in await repos.gdpr.list_permission_policies_for_export(conn, tenant_id)
                ],
                "consents": [
                    consent_json(c) for c in await repos.consents.list_consents(conn, tenant_id)
                ],
                "audit_logs": [audit_entry_json(e) for e in audit],
                "webhooks": [
                    exported_webhook_json(w)
                    for w in await repos.gdpr.list_webhooks_for_export(conn, tenant_id)
                ],
                "api_keys": [api_key_json(k, role_scopes=scopes) for k, scopes in keys],
                "roles": [
                    role_json(r, tenant_id)
                    for r in await repos.gdpr.list_roles_for_export(conn, tenant_id)
                ],
                "children": [
                    {"id": str(c.id), "slug": c.slug, "name": c.name, "status": c.status}
                    for c in children
                ],
            }
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    "tenant.exported",
                    "tenant",
                    tenant_id,
                    tenant_id,
                    {"include_secrets": include_secrets},
                ),
            )
            return document

        return await self.deps.db.transaction(work, isolation="repeatable_read")
