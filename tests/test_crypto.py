"""service.crypto: the v1 format, per-purpose keys, row binding, previous keys."""

from __future__ import annotations

import os
import re

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from service.base.crypto import (
    PURPOSE_CONFIG,
    PURPOSE_WEBHOOK_SECRET,
    DecryptionError,
    Encryptor,
    KeyRing,
    config_aad,
    webhook_aad,
)

KEY = bytes(range(32))
AAD = config_aad("t1", "db.password")


def test_v1_format_and_round_trip() -> None:
    enc = Encryptor(KEY)
    token = enc.encrypt(b"hunter2", purpose=PURPOSE_CONFIG, aad=AAD)
    match = re.fullmatch(r"v1:([0-9a-f]{24}):([0-9a-f]{32}):([0-9a-f]+)", token)
    assert match is not None
    assert len(bytes.fromhex(match[3])) == len(b"hunter2")
    assert enc.decrypt(token, purpose=PURPOSE_CONFIG, aad=AAD) == b"hunter2"
    # A fresh IV every time.
    assert token != enc.encrypt(b"hunter2", purpose=PURPOSE_CONFIG, aad=AAD)


def test_key_is_hkdf_sha256_of_the_master_key_per_purpose() -> None:
    token = Encryptor(KEY).encrypt(b"value", purpose=PURPOSE_CONFIG, aad=AAD)
    _, iv, tag, ciphertext = token.split(":")
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None,
        info=b"tenant-service/v1/" + PURPOSE_CONFIG.encode(),
    ).derive(KEY)  # fmt: skip
    plain = AESGCM(derived).decrypt(bytes.fromhex(iv), bytes.fromhex(ciphertext + tag), AAD)
    assert plain == b"value"


@pytest.mark.parametrize(
    ("purpose", "aad"),
    [
        (PURPOSE_WEBHOOK_SECRET, AAD),  # another purpose's key
        (PURPOSE_CONFIG, config_aad("t2", "db.password")),  # another tenant
        (PURPOSE_CONFIG, config_aad("t1", "db.user")),  # another key
        (PURPOSE_CONFIG, webhook_aad("t1")),
    ],
)
def test_bound_to_purpose_and_row(purpose: str, aad: bytes) -> None:
    enc = Encryptor(KEY)
    token = enc.encrypt(b"secret", purpose=PURPOSE_CONFIG, aad=AAD)
    with pytest.raises(DecryptionError):
        enc.decrypt(token, purpose=purpose, aad=aad)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t.replace("v1:", "v2:", 1),
        lambda t: t[:-2] + ("00" if t[-2:] != "00" else "11"),  # ciphertext
        lambda t: t.split(":")[0] + ":" + "0" * 24 + ":" + ":".join(t.split(":")[2:]),  # iv
        lambda t: t + ":extra",
        lambda t: "v1:zz:zz:zz",
        lambda t: "plain text",
    ],
)
def test_tampered_or_malformed_values_do_not_decrypt(mangle) -> None:
    enc = Encryptor(KEY)
    token = enc.encrypt(b"secret", purpose=PURPOSE_CONFIG, aad=AAD)
    with pytest.raises(DecryptionError):
        enc.decrypt(mangle(token), purpose=PURPOSE_CONFIG, aad=AAD)


def test_previous_keys_read_and_rotation_keeps_the_old_key() -> None:
    old, new = os.urandom(32), os.urandom(32)
    old_token = Encryptor(old).encrypt(b"v", purpose=PURPOSE_CONFIG, aad=AAD)
    with pytest.raises(DecryptionError):
        Encryptor(new).decrypt(old_token, purpose=PURPOSE_CONFIG, aad=AAD)
    assert Encryptor(new, [old]).decrypt(old_token, purpose=PURPOSE_CONFIG, aad=AAD) == b"v"

    ring = KeyRing(Encryptor(old))
    ring.rotate_to(new)
    assert ring.encryptor.keys == (new, old)
    new_token = ring.encryptor.encrypt(b"w", purpose=PURPOSE_CONFIG, aad=AAD)
    assert Encryptor(new).decrypt(new_token, purpose=PURPOSE_CONFIG, aad=AAD) == b"w"
    assert ring.encryptor.decrypt(old_token, purpose=PURPOSE_CONFIG, aad=AAD) == b"v"
    with pytest.raises(ValueError, match="32 bytes"):
        Encryptor(b"short")
