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
class PurgedEntry:
    at: datetime
    id: UUID
    seq: int | None


@dataclass(frozen=True, slots=True)
class ChainAnchor:
    keep_seq: int | None  # the oldest link whose entry is kept
    first_seq: int | None  # the oldest link kept
    last_seq: int | None  # the newest link


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
    _delete_entries = NamedSql("delete_expired_audit_entries")
    _anchor = NamedSql("find_audit_chain_anchor")
    _allow_cut = NamedSql("allow_audit_chain_cut")
    _delete_links = NamedSql("delete_audit_chain_links")

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

    async def delete_expired_entries(
        self,
        conn: asyncpg.Connection,
        cutoff: datetime,
        limit: int,
        after_at: datetime,
        after_id: UUID,
    ) -> list[PurgedEntry]:
        rows = await self._delete_entries.many(
            conn, cutoff=cutoff, after_at=after_at, after_id=after_id, row_limit=limit
        )
        return [PurgedEntry(r["at"], r["id"], r["seq"]) for r in rows]

    async def find_anchor(self, conn: asyncpg.Connection) -> ChainAnchor:
        row = await self._anchor.one(conn)
        assert row is not None
        return ChainAnchor(row["keep_seq"], row["first_seq"], row["last_seq"])

    async def delete_links_through(self, conn: asyncpg.Connection, through_seq: int) -> int:
        """Drop the links up to through_seq; opens the link guard for this transaction."""
        await self._allow_cut.exec(conn, through_seq=through_seq)
        return int(await self._delete_links.value(conn, through_seq=through_seq))
