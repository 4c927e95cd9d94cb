"""What declaring and removing a key's value schema or budget share: the key lock a write
of the key at the tenant takes (so a declaration and the entries' writes judge each
other's committed state), and the audit entry and event of the change."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Actor, Principal
from service.repositories.key_locks import KeyWrite
from service.repositories.tenants import TenantNode
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord, Event
from service.usecases.entries.writes import lock_tenant_for_entries


async def lock_declared_key(
    conn: asyncpg.Connection, deps: Deps, principal: Principal, tenant_id: UUID, key: str
) -> TenantNode:
    """The tenant, visible, active and locked for entry writes, and the key's lock."""
    node = await lock_tenant_for_entries(conn, deps.repos.tenants, principal, tenant_id)
    await deps.repos.config.lock_config_keys(conn, [KeyWrite(node.ancestry_path, key)])
    return node


async def record_declaration(
    conn: asyncpg.Connection,
    deps: Deps,
    actor: Actor,
    tenant_id: UUID,
    key: str,
    changes: dict[str, Any],
    event: Event,
) -> None:
    """The audit entry (its resource type the action's prefix: config_schema,
    config_budget) and the event of a declaration's change."""
    await deps.recorder.record(
        conn,
        actor,
        AuditRecord(
            action=event.type,
            resource_type=event.type.partition(".")[0],
            resource_id=key,
            tenant_id=tenant_id,
            changes=changes,
        ),
        [event],
    )
