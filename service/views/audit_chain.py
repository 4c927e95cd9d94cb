"""Views of the audit chain's verification and export (docs/security.md "Audit chain")."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import msgspec

from service.repositories.audit_chain import ChainHead, ChainLink
from service.repositories.audit_logs import AuditEntryRow
from service.views.base import View
from service.views.compliance import AuditEntry

BreakReason = Literal[
    "sequence_gap",
    "link_mismatch",
    "hash_mismatch",
    "changes_mismatch",
    "missing_entry",
    "unanchored_start",
    "unchained_entry",
    "unrecorded_checkpoint",
]


class ChainHeadShape(View):
    seq: int
    hash: str

    @classmethod
    def of(cls, head: ChainHead) -> ChainHeadShape:
        return cls(seq=head.seq, hash=head.hash.hex())


class ChainBreakShape(View):
    reason: BreakReason
    seq: int | None
    entry_id: UUID | None
    detail: str


class AuditChainVerification(View):
    valid: bool
    from_seq: int | None
    to_seq: int | None
    checked: int
    redacted: int
    purged: int
    head: ChainHeadShape
    first_break: ChainBreakShape | None


# An audit entry with what its link hashes besides its fields.
class ChainedEntry(AuditEntry):
    created_at_us: int
    changes_text: str | None

    @classmethod
    def chained(
        cls, e: AuditEntryRow, created_at_us: int, changes_text: str | None
    ) -> ChainedEntry:
        fields = msgspec.structs.asdict(AuditEntry.of(e))
        return cls(**fields, created_at_us=created_at_us, changes_text=changes_text)


class AuditChainLink(View):
    seq: int
    entry_id: UUID
    prev_hash: str
    entry_hash: str
    changes_digest: str
    entry: ChainedEntry | None

    @classmethod
    def of(cls, link: ChainLink, created_at_us: int | None) -> AuditChainLink:
        """created_at_us: the entry's creation instant as hashed (None: the entry is gone)."""
        entry = None
        if link.entry is not None and created_at_us is not None:
            entry = ChainedEntry.chained(link.entry, created_at_us, link.changes_text)
        return cls(
            seq=link.seq,
            entry_id=link.entry_id,
            prev_hash=link.prev_hash.hex(),
            entry_hash=link.entry_hash.hex(),
            changes_digest=link.changes_digest.hex(),
            entry=entry,
        )
