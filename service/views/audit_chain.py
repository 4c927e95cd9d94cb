"""Views of the audit chain's verification and export (docs/security.md "Audit chain")."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from service.views.base import Instant, View

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


class ChainedEntry(View):
    id: UUID
    tenant_id: UUID | None
    actor_id: str
    actor_type: Literal["api_key", "jwt", "system"]
    action: str
    resource_type: str
    resource_id: str | None
    changes: dict[str, Any] | None
    request_id: str | None
    ip_address: str | None
    created_at: Instant
    created_at_us: int
    changes_text: str | None


class AuditChainLink(View):
    seq: int
    entry_id: UUID
    prev_hash: str
    entry_hash: str
    changes_digest: str
    entry: ChainedEntry | None
