"""The audit chain's hash, recomputed outside the database (docs/security.md "Audit chain").

The same rules as migration 0025's audit_chain_canonical(): the bytes hashed for an
entry are the UTF-8 JSON array

    ["audit-chain-v1", seq, id, tenant_id, actor_id, actor_type, action, resource_type,
     resource_id, request_id, ip_address, created_at_us, changes_digest_hex]

with ", " between items, strings escaped only where JSON requires it (non-ASCII as is),
missing values as null, created_at_us the creation instant in whole microseconds since
the Unix epoch; changes_digest is sha256 of `changes` as PostgreSQL's jsonb prints it
('null' for none). entry_hash = sha256(prev_hash || those bytes), prev_hash being 32
zero bytes before the first link. This module imports nothing of the service so the
offline check in docs/security.md is this file.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

VERSION = "audit-chain-v1"
GENESIS = bytes(32)
REDACTED_TEXT = '{"redacted": true}'
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def microseconds(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(microseconds=1)


def changes_digest(changes_text: str | None) -> bytes:
    return hashlib.sha256(("null" if changes_text is None else changes_text).encode()).digest()


def canonical(seq: int, fields: dict[str, Any], digest: bytes) -> bytes:
    """fields: id, tenant_id, actor_id, actor_type, action, resource_type, resource_id,
    request_id, ip_address (text or None) and created_at_us (int)."""
    items = [
        VERSION,
        seq,
        fields["id"],
        fields["tenant_id"],
        fields["actor_id"],
        fields["actor_type"],
        fields["action"],
        fields["resource_type"],
        fields["resource_id"],
        fields["request_id"],
        fields["ip_address"],
        fields["created_at_us"],
        digest.hex(),
    ]
    return json.dumps(items, ensure_ascii=False).encode()


def entry_hash(prev_hash: bytes, seq: int, fields: dict[str, Any], digest: bytes) -> bytes:
    return hashlib.sha256(prev_hash + canonical(seq, fields, digest)).digest()
