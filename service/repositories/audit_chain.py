"""The audit chain's links (migration 0025): read to verify and export, trimmed by retention."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository
from service.repositories.audit_logs import AuditEntryRow


@dataclass(frozen=True, slots=True)
class ChainHead:
    seq: int
    hash: bytes
    first_seq: int | None  # the oldest link kept; None before any entry


@dataclass(frozen=True, slots=True)
class ChainLink:
    seq: int
    entry_id: UUID
    changes_digest: bytes
    prev_hash: bytes
    entry_hash: bytes
    entry: AuditEntryRow | None  # None: the entry is gone (purged, or deleted behind our back)
    changes_text: str | None  # `changes` as jsonb prints it: the bytes changes_digest covers


@dataclass(frozen=True, slots=True)
class PurgeEntry:
    """The audit.purged entry a batch writes: its id and who asked."""

    id: UUID
    actor_id: str
    actor_type: str
    request_id: str | None
    ip_address: str | None


@dataclass(frozen=True, slots=True)
class PurgeBatch:
    """One batch of retention: the checkpoint it recorded (the id of its audit.purged
    entry) and the newest entry removed."""

    checkpoint_id: UUID
    changes: dict[str, Any]
    deleted: int
    last_at: datetime
    last_id: UUID


def _link(row: asyncpg.Record) -> ChainLink:
    entry = None
    if row["id"] is not None:
        entry = AuditEntryRow(
            id=row["id"],
            tenant_id=row["tenant_id"],
            actor_id=row["actor_id"],
            actor_type=row["actor_type"],
            action=row["action"],
            resource_type=row["resource_type"],
            resource_id=row["resource_id"],
            changes=row["changes"],
            request_id=row["request_id"],
            ip_address=row["ip_address"],
            created_at=row["created_at"],
        )
    return ChainLink(
        seq=row["seq"],
        entry_id=row["entry_id"],
        changes_digest=bytes(row["changes_digest"]),
        prev_hash=bytes(row["prev_hash"]),
        entry_hash=bytes(row["entry_hash"]),
        entry=entry,
        changes_text=row["changes_text"],
    )


class AuditChainRepository(Repository):
    _head = NamedSql("get_audit_chain_head")
    _links = NamedSql("list_audit_chain_links")
    _link_hash = NamedSql("get_audit_chain_link_hash")
    _checkpoints = NamedSql("list_audit_chain_checkpoints")
    _unchained = NamedSql("find_unchained_audit_entry")
    _unrecorded = NamedSql("find_unrecorded_audit_checkpoint")
    _purge = NamedSql("purge_audit_batch")

    async def get_head(self, conn: asyncpg.Connection) -> ChainHead:
        row = await self._head.one(conn)
        assert row is not None  # one row, always
        if row["head_seq"] is None:
            return ChainHead(0, bytes(32), None)
        return ChainHead(row["head_seq"], bytes(row["head_hash"]), row["first_seq"])

    async def list_links(
        self, conn: asyncpg.Connection, *, from_seq: int, to_seq: int, limit: int
    ) -> list[ChainLink]:
        rows = await self._links.many(conn, from_seq=from_seq, to_seq=to_seq, row_limit=limit)
        return [_link(r) for r in rows]

    async def get_link_hash(self, conn: asyncpg.Connection, seq: int) -> bytes | None:
        value = await self._link_hash.value(conn, seq=seq)
        return None if value is None else bytes(value)

    async def list_checkpoints(self, conn: asyncpg.Connection) -> list[dict[str, Any]]:
        return [r["changes"] for r in await self._checkpoints.many(conn) if r["changes"]]

    async def find_unchained_entry(self, conn: asyncpg.Connection) -> UUID | None:
        row = await self._unchained.one(conn)
        return None if row is None else UUID(str(row["id"]))

    async def find_unrecorded_checkpoint(self, conn: asyncpg.Connection) -> UUID | None:
        row = await self._unrecorded.one(conn)
        return None if row is None else UUID(str(row["id"]))

    async def purge_batch(
        self,
        conn: asyncpg.Connection,
        cutoff: datetime,
        limit: int,
        after_at: datetime,
        after_id: UUID,
        entry: PurgeEntry,
    ) -> PurgeBatch | None:
        """Delete one batch of entries created before cutoff and write its audit.purged
        entry (None: none left)."""
        row = await self._purge.one(
            conn,
            cutoff=cutoff,
            after_at=after_at,
            after_id=after_id,
            row_limit=limit,
            entry_id=entry.id,
            actor_id=entry.actor_id,
            actor_type=entry.actor_type,
            request_id=entry.request_id,
            ip_address=entry.ip_address,
        )
        if row is None:
            return None
        return PurgeBatch(
            checkpoint_id=row["purge_id"],
            changes=row["purge_changes"],
            deleted=row["purged"],
            last_at=row["purged_last_at"],
            last_id=row["purged_last_id"],
        )
