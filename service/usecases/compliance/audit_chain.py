"""Verifying and exporting the audit chain (docs/security.md "Audit chain").

Verification reads the links in order in one snapshot and recomputes every hash in
Python from the documented serialization (chain_hash.py), so it checks the database's
trigger rather than trusting it. It stops at the first break and says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.repositories.audit_chain import ChainHead, ChainLink
from service.repositories.audit_logs import AuditEntryRow
from service.usecases.common.deps import Deps
from service.usecases.compliance.chain_hash import (
    GENESIS,
    REDACTED_TEXT,
    changes_digest,
    entry_hash,
    microseconds,
)
from service.views.audit_chain import BreakReason

PAGE = 1000


def hash_fields(e: AuditEntryRow) -> dict[str, Any]:
    def text(value: object | None) -> str | None:
        return None if value is None else str(value)

    return {
        "id": str(e.id),
        "tenant_id": text(e.tenant_id),
        "actor_id": e.actor_id,
        "actor_type": e.actor_type,
        "action": e.action,
        "resource_type": e.resource_type,
        "resource_id": e.resource_id,
        "request_id": e.request_id,
        "ip_address": e.ip_address,
        "created_at_us": microseconds(e.created_at),
    }


@dataclass(frozen=True, slots=True)
class ExportedLink:
    link: ChainLink
    created_at_us: int | None  # its entry's creation instant as hashed (None: no entry)


@dataclass(frozen=True, slots=True)
class Break:
    """The first break a verification met: why, where, and in words."""

    reason: BreakReason
    seq: int | None
    entry_id: UUID | None
    detail: str


@dataclass(slots=True)
class Tally:
    checked: int = 0
    redacted: int = 0
    purged: int = 0


@dataclass(frozen=True, slots=True)
class Verification:
    """A verification over links from_seq..to_seq (None: no link in the range)."""

    from_seq: int | None
    to_seq: int | None
    tally: Tally
    head: ChainHead
    first_break: Break | None


class ChainBreak(Exception):
    def __init__(self, reason: BreakReason, seq: int | None, entry_id: UUID | None, detail: str):
        super().__init__(detail)
        self.found = Break(reason, seq, entry_id, detail)


@dataclass(slots=True)
class Purged:
    """The links whose entries retention removed, and where retention left the chain's
    start (from the audit.purged entries)."""

    ranges: list[tuple[int, int]] = field(default_factory=list)
    starts: set[tuple[int, str]] = field(default_factory=set)

    @classmethod
    def of(cls, checkpoints: Iterable[dict[str, Any]]) -> Purged:
        purged = cls()
        for c in checkpoints:
            try:
                ranges = [(int(a), int(b)) for a, b in c.get("seqs", [])]
                start = c.get("chain_start")
                first = None if start is None else (int(start["seq"]), str(start["prev_hash"]))
            except (TypeError, ValueError, KeyError, AttributeError):
                continue  # a checkpoint rewritten by hand counts for nothing
            purged.ranges.extend(ranges)
            if first is not None:
                purged.starts.add(first)
        return purged

    def covers(self, seq: int) -> bool:
        return any(a <= seq <= b for a, b in self.ranges)


def check_link(link: ChainLink, expected_prev: bytes, purged: Purged, tally: Tally) -> None:
    if link.prev_hash != expected_prev:
        raise ChainBreak(
            "link_mismatch", link.seq, link.entry_id,
            "prev_hash is not the hash of the link before (a link was changed, removed or moved)",
        )  # fmt: skip
    if link.entry is None:
        if not purged.covers(link.seq):
            raise ChainBreak(
                "missing_entry", link.seq, link.entry_id,
                "the entry is gone and no retention checkpoint lists it",
            )  # fmt: skip
        tally.purged += 1
        return
    if link.changes_text == REDACTED_TEXT:
        tally.redacted += 1  # redaction replaces changes; the digest keeps the original's
    elif changes_digest(link.changes_text) != link.changes_digest:
        raise ChainBreak(
            "changes_mismatch", link.seq, link.entry_id,
            "the entry's changes are not the ones recorded",
        )  # fmt: skip
    recomputed = entry_hash(link.prev_hash, link.seq, hash_fields(link.entry), link.changes_digest)
    if recomputed != link.entry_hash:
        raise ChainBreak(
            "hash_mismatch", link.seq, link.entry_id,
            "the entry's fields do not hash to its link (an entry was edited or moved)",
        )  # fmt: skip


def denied() -> ServiceError:
    return ServiceError(
        "TENANT_ACCESS_DENIED", "the audit chain is global; a tenant-scoped caller cannot read it"
    )


class AuditChain:
    def __init__(self, deps: Deps) -> None:
        self.db = deps.db
        self.chain = deps.repos.audit_chain

    async def verify(
        self, principal: Principal, from_seq: int | None, to_seq: int | None
    ) -> Verification:
        if principal.is_scoped:
            raise denied()
        return await self.db.transaction(
            lambda conn: self._verify(conn, from_seq, to_seq), isolation="repeatable_read"
        )

    async def _verify(
        self, conn: asyncpg.Connection, from_seq: int | None, to_seq: int | None
    ) -> Verification:
        head = await self.chain.get_head(conn)
        first = head.first_seq if head.first_seq is not None else head.seq + 1
        start = max(from_seq or first, first)
        end = min(to_seq or head.seq, head.seq)
        tally = Tally()
        problem: Break | None = None
        try:
            if start <= end:
                await self._walk(conn, first, start, end, tally)
            unchained = await self.chain.find_unchained_entry(conn)
            if unchained is not None:
                raise ChainBreak(
                    "unchained_entry", None, unchained,
                    "an entry has no link (written with the chain trigger disabled)",
                )  # fmt: skip
            forged = await self.chain.find_unrecorded_checkpoint(conn)
            if forged is not None:
                raise ChainBreak(
                    "unrecorded_checkpoint", None, forged,
                    "an audit.purged entry that retention did not record (a forged checkpoint)",
                )  # fmt: skip
        except ChainBreak as broken:
            problem = broken.found
        within = start <= end
        return Verification(
            start if within else None, end if within else None, tally, head, problem
        )

    async def _walk(
        self, conn: asyncpg.Connection, first: int, start: int, end: int, tally: Tally
    ) -> None:
        purged = Purged.of(await self.chain.list_checkpoints(conn))
        expected_prev = await self._expected_prev(conn, first, start, purged)
        seq = start
        last_hash = expected_prev
        while seq <= end:
            links = await self.chain.list_links(conn, from_seq=seq, to_seq=end, limit=PAGE)
            for link in links:
                if link.seq != seq:
                    raise ChainBreak(
                        "sequence_gap", seq, None, f"links {seq}..{link.seq - 1} are missing"
                    )
                check_link(link, last_hash or link.prev_hash, purged, tally)
                last_hash = link.entry_hash
                tally.checked += 1
                seq += 1
            if not links:
                raise ChainBreak("sequence_gap", seq, None, f"links {seq}..{end} are missing")

    async def _expected_prev(
        self, conn: asyncpg.Connection, first: int, start: int, purged: Purged
    ) -> bytes | None:
        """What the first checked link's prev_hash must be (None: its own, checked against
        a retention checkpoint)."""
        if start == 1:
            return GENESIS
        if start > first:
            before = await self.chain.get_link_hash(conn, start - 1)
            if before is None:
                raise ChainBreak("sequence_gap", start - 1, None, f"link {start - 1} is missing")
            return before
        links = await self.chain.list_links(conn, from_seq=start, to_seq=start, limit=1)
        if not links or (start, links[0].prev_hash.hex()) not in purged.starts:
            raise ChainBreak(
                "unanchored_start", start, None,
                f"the chain starts at link {start} but no retention checkpoint says so "
                "(older links were removed behind retention's back)",
            )  # fmt: skip
        return None

    async def export(
        self, principal: Principal, from_seq: int | None, limit: int
    ) -> tuple[list[ExportedLink], int | None]:
        """One page of links with their entries in order; the next page's from_seq."""
        if principal.is_scoped:
            raise denied()

        async def work(conn: asyncpg.Connection) -> list[ChainLink]:
            return await self.chain.list_links(
                conn, from_seq=from_seq or 1, to_seq=2**63 - 1, limit=limit + 1
            )

        links = await self.db.run(work)
        more = len(links) > limit
        page = links[:limit]
        exported = [
            ExportedLink(x, None if x.entry is None else microseconds(x.entry.created_at))
            for x in page
        ]
        return exported, (page[-1].seq + 1 if more else None)
