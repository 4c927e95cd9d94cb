"""Retention of audit entries without breaking the audit chain.

Each batch deletes entries created before the cutoff, keeps their links (so the chain
still links up across them), drops the links at the chain's start that no longer have
an entry, and records an `audit.purged` checkpoint in the same transaction: which link
numbers lost their entries, and the chain's new start with the hash before it. The
checkpoint is itself an entry of the chain, so verification can tell retention's gaps
from rows removed by hand (docs/security.md "Audit chain").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import asyncpg

from service.auth.principal import Actor
from service.base.timefmt import iso
from service.repositories.retention import EPOCH_START, NIL_UUID, Batch, Position
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord


def seq_ranges(seqs: Iterable[int]) -> list[list[int]]:
    """[3, 4, 5, 9] -> [[3, 5], [9, 9]]."""
    ranges: list[list[int]] = []
    for seq in sorted(set(seqs)):
        if ranges and ranges[-1][1] == seq - 1:
            ranges[-1][1] = seq
        else:
            ranges.append([seq, seq])
    return ranges


async def purge_audit_batch(
    deps: Deps,
    conn: asyncpg.Connection,
    actor: Actor,
    cutoff: datetime,
    limit: int,
    after: Position | None,
) -> Batch:
    repos = deps.repos
    position = after or Position(EPOCH_START, NIL_UUID)
    await repos.retention.allow_audit_retention(conn, cutoff)
    gone = await repos.audit_chain.delete_expired_entries(
        conn, cutoff, limit, position.at, position.id
    )
    if not gone:
        return Batch(0, None)
    changes: dict[str, Any] = {
        "cutoff": iso(cutoff),
        "entries": len(gone),
        "seqs": seq_ranges(g.seq for g in gone if g.seq is not None),
        "links_removed": 0,
        "chain_start": None,
    }
    anchor = await repos.audit_chain.find_anchor(conn)
    if anchor.first_seq is not None and anchor.last_seq is not None:
        # Drop the links before the oldest kept entry, but never the newest link: the
        # next one chains to it.
        start = min(anchor.keep_seq or anchor.last_seq, anchor.last_seq)
        if anchor.first_seq < start:
            changes["links_removed"] = await repos.audit_chain.delete_links_through(conn, start - 1)
        [first] = await repos.audit_chain.list_links(conn, from_seq=start, to_seq=start, limit=1)
        changes["chain_start"] = {"seq": start, "prev_hash": first.prev_hash.hex()}
    await deps.recorder.record(
        conn,
        actor,
        AuditRecord(
            action="audit.purged",
            resource_type="audit_log",
            resource_id=None,
            tenant_id=None,
            changes=changes,
        ),
    )
    last = max((g.at, g.id) for g in gone)
    return Batch(len(gone), Position(last[0], last[1]))
