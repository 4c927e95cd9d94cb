"""AES-256-GCM for values at rest: v1:<iv>:<tag>:<ciphertext> in lowercase hex.

The AES key is HKDF-SHA256(SERVICE_ENCRYPTION_KEY, info=purpose label), so a key for
config values never decrypts webhook secrets; the associated data binds each value to
its row, so a ciphertext copied to another row does not decrypt.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PURPOSE_CONFIG = "config-value"
PURPOSE_WEBHOOK_SECRET = "webhook-secret"  # noqa: S105 - a label, not a secret
PURPOSE_IDEMPOTENT_ANSWER = "idempotent-answer"
_INFO_PREFIX = b"tenant-service/v1/"
_VERSION = "v1"


class DecryptionError(Exception):
    """No known key decrypts the value for this row (wrong key, tampering, or moved)."""


@lru_cache(maxsize=64)
def _derive(master: bytes, purpose: str) -> AESGCM:
    hkdf = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO_PREFIX + purpose.encode()
    )
    return AESGCM(hkdf.derive(master))


def config_aad(tenant_id: object, key: str) -> bytes:
    return f"config:{tenant_id}:{key}".encode()


def webhook_aad(webhook_id: object) -> bytes:
    return f"webhook:{webhook_id}".encode()


def idempotency_aad(key_hash: bytes) -> bytes:
    return b"idempotency:" + key_hash.hex().encode()


class Encryptor:
    """Encrypts with the current key; decrypts with the current or any previous key."""

    def __init__(self, key: bytes, previous: Sequence[bytes] = ()) -> None:
        if len(key) != 32:
            raise ValueError("the encryption key must be 32 bytes")
        self.key = key
        self.previous = tuple(k for k in previous if k != key)

    @property
    def keys(self) -> tuple[bytes, ...]:
        """Every key this encryptor can decrypt with, the current one first."""
        return (self.key, *self.previous)

    def with_key(self, key: bytes) -> Encryptor:
        """The encryptor after a rotation: the new key current, the old ones kept for reading."""
        return Encryptor(key, (self.key, *self.previous))

    def encrypt(self, plaintext: bytes, *, purpose: str, aad: bytes) -> str:
        return encrypt_with(self.key, plaintext, purpose=purpose, aad=aad)

    def decrypt(self, token: str, *, purpose: str, aad: bytes) -> bytes:
        for key in self.keys:
            try:
                return decrypt_with(key, token, purpose=purpose, aad=aad)
            except DecryptionError:
                continue
        raise DecryptionError("no configured key decrypts this value")


def encrypt_with(key: bytes, plaintext: bytes, *, purpose: str, aad: bytes) -> str:
    iv = os.urandom(12)
    sealed = _derive(key, purpose).encrypt(iv, plaintext, aad)
    ciphertext, tag = sealed[:-16], sealed[-16:]
    return f"{_VERSION}:{iv.hex()}:{tag.hex()}:{ciphertext.hex()}"


def decrypt_with(key: bytes, token: str, *, purpose: str, aad: bytes) -> bytes:
    parts = token.split(":")
    if len(parts) != 4 or parts[0] != _VERSION:
        raise DecryptionError("not a v1 encrypted value")
    try:
        iv, tag, ciphertext = (bytes.fromhex(p) for p in parts[1:])
    except ValueError as exc:
        raise DecryptionError("malformed encrypted value") from exc
    if len(iv) != 12 or len(tag) != 16:
        raise DecryptionError("malformed encrypted value")
    try:
        return _derive(key, purpose).decrypt(iv, ciphertext + tag, aad)
    except InvalidTag as exc:
        raise DecryptionError("authentication failed") from exc


class KeyRing:
    """The process's current encryptor; a rotation swaps it at once for every request."""

    def __init__(self, encryptor: Encryptor) -> None:
        self._encryptor = encryptor

    @property
    def encryptor(self) -> Encryptor:
        return self._encryptor

    def rotate_to(self, new_key: bytes) -> None:
        self._encryptor = self._encryptor.with_key(new_key)
