"""Issuing API keys: the plaintext exists only in the answer to its creator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.auth.keys import Environment, generate_key, hash_key
from service.auth.principal import Actor
from service.base.ids import uuid7
from service.repositories.api_keys import ApiKeyRow, ApiKeysRepository, NewApiKey
from service.usecases.common.recording import AuditRecord, ChangeRecorder
from service.usecases.keys.access import key_audit_view


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key: ApiKeyRow
    plaintext: str


async def issue_api_key(
    conn: asyncpg.Connection,
    *,
    keys: ApiKeysRepository,
    recorder: ChangeRecorder,
    hmac_secret: bytes,
    actor: Actor,
    name: str,
    scopes: Sequence[str],
    tenant_id: UUID | None = None,
    environment: Environment = "live",
    role_id: UUID | None = None,
    rate_limit_max: int | None = None,
    rate_limit_window: str | None = None,
    rate_limit_window_seconds: int | None = None,
    expires_at: datetime | None = None,
    rotated_from: UUID | None = None,
) -> IssuedKey:
    """Store a new key in the caller's transaction, with its audit entry."""
    new = generate_key(environment)
    stored = await keys.insert_api_key(
        conn,
        NewApiKey(
            id=uuid7(),
            tenant_id=tenant_id,
            name=name,
            prefix=new.prefix,
            key_hash=hash_key(hmac_secret, new.plaintext),
            environment=environment,
            scopes=sorted(set(scopes)),
            role_id=role_id,
            rate_limit_max=rate_limit_max,
            rate_limit_window=rate_limit_window,
            rate_limit_window_seconds=rate_limit_window_seconds,
            expires_at=expires_at,
            rotated_from=rotated_from,
        ),
    )
    await recorder.record(
        conn,
        actor,
        AuditRecord(
            action="api_key.created",
            resource_type="api_key",
            resource_id=stored.id,
            tenant_id=tenant_id,
            changes={"before": None, "after": key_audit_view(stored)},
        ),
    )
    return IssuedKey(stored, new.plaintext)
