"""Retention of audit entries without breaking the audit chain.

Each batch is one call of migration 0031's audit_purge_batch, a function owned by a role
the service cannot act as: it deletes entries created before the cutoff (at least a day
old), keeps their links (so the chain still links up across them), drops the links at
the chain's start that no longer have an entry, and records a checkpoint (which link
numbers lost their entries, and the chain's new start with the hash before it) in a
table only it writes, and as an `audit.purged` entry, itself part of the chain, with the
same id; verification trusts a checkpoint only when the function recorded it
(docs/security.md "Audit chain").
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from service.auth.principal import Actor
from service.base.ids import uuid7
from service.repositories.audit_chain import PurgeEntry
from service.repositories.retention import EPOCH_START, NIL_UUID, Position, RetentionBatchRow
from service.usecases.common.deps import Deps


async def purge_audit_batch(
    deps: Deps,
    conn: asyncpg.Connection,
    actor: Actor,
    cutoff: datetime,
    limit: int,
    after: Position | None,
) -> RetentionBatchRow:
    position = after or Position(EPOCH_START, NIL_UUID)
    entry = PurgeEntry(
        id=uuid7(),
        actor_id=actor.actor_id,
        actor_type=actor.actor_type,
        request_id=actor.request_id,
        ip_address=actor.ip_address,
    )
    batch = await deps.repos.audit_chain.purge_batch(
        conn, cutoff, limit, position.at, position.id, entry
    )
    if batch is None:
        return RetentionBatchRow(0, None)
    return RetentionBatchRow(batch.deleted, Position(batch.last_at, batch.last_id))
