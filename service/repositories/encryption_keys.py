"""Stored ciphertexts (sensitive config values, webhook secrets) read and rewritten in
keyset batches during a key rotation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class ConfigCiphertext:
    tenant_id: UUID
    key: str
    encrypted_value: str


@dataclass(frozen=True, slots=True)
class WebhookCiphertexts:
    id: UUID
    encrypted_secret: str
    previous_encrypted_secret: str | None


class EncryptionKeysRepository(Repository):
    _config_batch = NamedSql("lock_sensitive_config_batch")
    _update_config = NamedSql("update_config_ciphertexts")
    _webhook_batch = NamedSql("lock_webhook_secrets_batch")
    _update_webhooks = NamedSql("update_webhook_ciphertexts")

    async def lock_sensitive_config_batch(
        self, conn: asyncpg.Connection, after: tuple[UUID, str] | None, limit: int
    ) -> list[ConfigCiphertext]:
        tenant_id, key = after if after is not None else (None, None)
        rows = await self._config_batch.many(
            conn, after_tenant_id=tenant_id, after_key=key, batch_size=limit
        )
        return [ConfigCiphertext(**r) for r in rows]

    async def update_config_ciphertexts(
        self, conn: asyncpg.Connection, values: Sequence[ConfigCiphertext]
    ) -> None:
        if values:
            await self._update_config.exec(
                conn,
                tenant_ids=[v.tenant_id for v in values],
                keys=[v.key for v in values],
                encrypted_values=[v.encrypted_value for v in values],
            )

    async def lock_webhook_secrets_batch(
        self, conn: asyncpg.Connection, after: UUID | None, limit: int
    ) -> list[WebhookCiphertexts]:
        return await self._webhook_batch.many_as(
            WebhookCiphertexts, conn, after_id=after, batch_size=limit
        )

    async def update_webhook_ciphertexts(
        self, conn: asyncpg.Connection, values: Sequence[WebhookCiphertexts]
    ) -> None:
        if values:
            await self._update_webhooks.exec(
                conn,
                webhook_ids=[v.id for v in values],
                encrypted_secrets=[v.encrypted_secret for v in values],
                previous_encrypted_secrets=[v.previous_encrypted_secret for v in values],
            )
