"""Rotating the encryption key: every sensitive config value and webhook secret moves
from old_key to new_key in one transaction, or nothing changes.

Rows are read in keyset batches FOR UPDATE and rewritten batch by batch, so memory stays
flat however many secrets exist; a value no key opens aborts the whole transaction.
A value already under new_key (a repeated call, or a write by a process that had
switched) is accepted and re-encrypted too, so a rotation can safely be run again.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import asyncpg

from service.auth.principal import Actor
from service.base.crypto import (
    PURPOSE_CONFIG,
    PURPOSE_IDEMPOTENT_ANSWER,
    PURPOSE_WEBHOOK_SECRET,
    DecryptionError,
    config_aad,
    decrypt_with,
    encrypt_with,
    idempotency_aad,
    webhook_aad,
)
from service.base.errors import ServiceError, validation_error
from service.observability.logs import get_logger
from service.repositories.encryption_keys import ConfigCiphertext, WebhookCiphertexts
from service.repositories.idempotency import AnswerCiphertext
from service.schemas.config import RotateEncryptionKey
from service.settings.reader import decode_encryption_key
from service.usecases.common.deps import Deps
from service.usecases.common.recording import AuditRecord

log = get_logger("service.encryption_keys")
BATCH_SIZE = 500
R = TypeVar("R")  # a row whose ciphertexts are rewritten
K = TypeVar("K")  # its key, in the order batches are read


@dataclass(frozen=True, slots=True)
class RotationResult:
    config_entries_rotated: int
    webhooks_rotated: int


def key_mismatch(message: str) -> ServiceError:
    return ServiceError("ENCRYPTION_KEY_MISMATCH", message)


def _decode(text: str, field: str) -> bytes:
    try:
        return decode_encryption_key(text)
    except ValueError as exc:
        raise validation_error(field, str(exc)) from None


@dataclass(frozen=True, slots=True)
class _Keys:
    old: bytes
    new: bytes

    def reencrypt(self, token: str, *, purpose: str, aad: bytes) -> str | None:
        """token under new_key, or None when neither key opens it for this row."""
        for key in (self.old, self.new):
            try:
                plaintext = decrypt_with(key, token, purpose=purpose, aad=aad)
            except DecryptionError:
                continue
            return encrypt_with(self.new, plaintext, purpose=purpose, aad=aad)
        return None


class EncryptionKeyRotations:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repo = deps.repos.encryption_keys
        self.batch_size = BATCH_SIZE

    async def rotate(self, actor: Actor, body: RotateEncryptionKey) -> RotationResult:
        keys = self._validate(body)

        async def work(conn: asyncpg.Connection) -> RotationResult:
            result = RotationResult(
                await self._rotate_config(conn, keys), await self._rotate_webhooks(conn, keys)
            )
            # Not part of the answer (its two documented counts): stored Idempotency-Key
            # answers, which hold tenant data and plaintext keys, move along.
            answers = await self._rotate_idempotent_answers(conn, keys)
            await self.deps.recorder.record(
                conn,
                actor,
                AuditRecord(
                    action="maintenance.encryption_key_rotated",
                    resource_type="encryption_key",
                    resource_id=None,
                    tenant_id=None,
                    changes={
                        "config_entries_rotated": result.config_entries_rotated,
                        "webhooks_rotated": result.webhooks_rotated,
                        "idempotent_answers_rotated": answers,
                    },
                ),
            )
            return result

        result = await self.deps.db.transaction(work)
        # Committed: this process encrypts with the new key from now on and keeps the
        # old one for reading (values other processes still write with it).
        self.deps.keyring.rotate_to(keys.new)
        log.info(
            "encryption key rotated",
            config_entries_rotated=result.config_entries_rotated,
            webhooks_rotated=result.webhooks_rotated,
        )
        return result

    def _validate(self, body: RotateEncryptionKey) -> _Keys:
        old = _decode(body.old_key, "old_key")
        new = _decode(body.new_key, "new_key")
        if hmac.compare_digest(old, new):
            raise validation_error("new_key", "must differ from old_key")
        if len(set(new)) < 8:
            raise validation_error("new_key", "is weak; use 32 random bytes")
        known = self.deps.keyring.encryptor.keys
        if not any(hmac.compare_digest(old, k) for k in known):
            raise key_mismatch(
                "old_key is neither this process's SERVICE_ENCRYPTION_KEY nor one of "
                "SERVICE_ENCRYPTION_KEY_PREVIOUS; nothing was changed"
            )
        return _Keys(old, new)

    async def _rotate_config(self, conn: asyncpg.Connection, keys: _Keys) -> int:
        def rewrite(row: ConfigCiphertext) -> ConfigCiphertext:
            token = keys.reencrypt(
                row.encrypted_value, purpose=PURPOSE_CONFIG, aad=config_aad(row.tenant_id, row.key)
            )
            if token is None:
                raise key_mismatch(
                    f"old_key does not decrypt the sensitive config entry {row.key!r} of "
                    f"tenant {row.tenant_id}; nothing was changed"
                )
            return ConfigCiphertext(row.tenant_id, row.key, token)

        return await _in_keyset_batches(
            lambda after: self.repo.lock_sensitive_config_batch(conn, after, self.batch_size),
            rewrite,
            lambda rewritten: self.repo.update_config_ciphertexts(conn, rewritten),
            lambda row: (row.tenant_id, row.key),
        )

    async def _rotate_webhooks(self, conn: asyncpg.Connection, keys: _Keys) -> int:
        def rewrite(row: WebhookCiphertexts) -> WebhookCiphertexts:
            aad = webhook_aad(row.id)
            secret = keys.reencrypt(row.encrypted_secret, purpose=PURPOSE_WEBHOOK_SECRET, aad=aad)
            previous = (
                None
                if row.previous_encrypted_secret is None
                else keys.reencrypt(
                    row.previous_encrypted_secret, purpose=PURPOSE_WEBHOOK_SECRET, aad=aad
                )
            )
            unreadable_previous = row.previous_encrypted_secret is not None and previous is None
            if secret is None or unreadable_previous:
                raise key_mismatch(
                    f"old_key does not decrypt the secret of webhook {row.id}; nothing was changed"
                )
            return WebhookCiphertexts(row.id, secret, previous)

        return await _in_keyset_batches(
            lambda after: self.repo.lock_webhook_secrets_batch(conn, after, self.batch_size),
            rewrite,
            lambda rewritten: self.repo.update_webhook_ciphertexts(conn, rewritten),
            lambda row: row.id,
        )

    async def _rotate_idempotent_answers(self, conn: asyncpg.Connection, keys: _Keys) -> int:
        repo = self.deps.repos.idempotency

        def rewrite(row: AnswerCiphertext) -> AnswerCiphertext:
            token = keys.reencrypt(
                row.answer, purpose=PURPOSE_IDEMPOTENT_ANSWER, aad=idempotency_aad(row.key_hash)
            )
            if token is None:
                raise key_mismatch(
                    f"old_key does not decrypt the stored Idempotency-Key answer {row.id}; "
                    "nothing was changed"
                )
            return AnswerCiphertext(row.id, row.key_hash, token)

        return await _in_keyset_batches(
            lambda after: repo.lock_idempotency_answers_batch(conn, after, self.batch_size),
            rewrite,
            lambda rewritten: repo.update_idempotency_answers(conn, rewritten),
            lambda row: row.id,
        )


async def _in_keyset_batches(
    lock: Callable[[K | None], Awaitable[list[R]]],
    rewrite: Callable[[R], R],
    store: Callable[[list[R]], Awaitable[object]],
    position: Callable[[R], K],
) -> int:
    """Rewrite rows a batch at a time in key order, each batch locked after the last one's
    key, until none is left; how many were rewritten."""
    count = 0
    after: K | None = None
    while rows := await lock(after):
        await store([rewrite(row) for row in rows])
        count += len(rows)
        after = position(rows[-1])
    return count
