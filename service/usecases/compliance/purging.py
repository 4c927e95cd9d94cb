"""Hard-deleting tenants (a GDPR purge, or retention of archived tenants).

The caller holds the tree roots' exclusive locks. Every row of the tenants goes (config,
permissions, consents, webhooks and their deliveries, events, keys, roles, closure rows,
stored Idempotency-Key answers naming them, the tenants); audit entries stay with
`changes` redacted. Rows of OTHER tenants that name a purged tenant are redacted too: the
events of a child moved out of the subtree earlier keep their shape with the purged ids
replaced by null, and such audit entries get the redaction marker (docs/decisions/audit.md,
"GDPR").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

from service.caches.key_cache import KeyCache
from service.repositories.gdpr import EventPayload, PurgedRows
from service.repositories.registry import Repositories
from service.usecases.common.recording import AuditRecord, tenant_audit


def without_mentions(value: Any, ids: frozenset[str]) -> Any:
    """value with every string that contains one of ids replaced by None."""
    if isinstance(value, str):
        return None if any(i in value for i in ids) else value
    if isinstance(value, dict):
        return {k: without_mentions(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [without_mentions(v, ids) for v in value]
    return value


async def purge_tenant_rows(
    conn: asyncpg.Connection, repos: Repositories, tenant_ids: Sequence[UUID]
) -> PurgedRows:
    """Delete the tenants and everything they own; counts per kind of row."""
    purged = await repos.gdpr.delete_rows_of_tenants(conn, tenant_ids)
    counts = purged.counts
    names = frozenset(str(i) for i in tenant_ids)
    mentions = await repos.gdpr.find_events_mentioning_tenants(conn, tenant_ids)
    await repos.gdpr.replace_event_payloads(
        conn, [EventPayload(m.id, without_mentions(m.payload, names)) for m in mentions]
    )
    counts["events_redacted"] = len(mentions)
    counts["audit_logs_redacted"] = await repos.audit_logs.redact_audit_logs_of_tenants(
        conn, tenant_ids
    )
    # Stored Idempotency-Key answers are copies of answers that carried the tenants' data:
    # they go too (not counted: they are not records of the tenants).
    await repos.idempotency.delete_idempotency_keys_of_tenants(conn, tenant_ids)
    return purged


def purged_record(tenant_id: UUID, changes: dict[str, Any]) -> AuditRecord:
    """The audit entry of a purged tenant. Its changes say how it went, never what it
    held: the purged tenant's data must not survive in the log."""
    return tenant_audit(
        "tenant.purged",
        tenant_id,
        changes={"redacted": True, **changes},
    )


def forget_credentials(cache: KeyCache, purged: PurgedRows) -> None:
    """After commit: this process stops trusting the deleted keys and roles at once
    (other processes hear migration 0006's triggers)."""
    for key_id in purged.api_key_ids:
        cache.invalidate_key(key_id)
    for role_id in purged.role_ids:
        cache.invalidate_role(role_id)
