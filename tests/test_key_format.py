"""API key text: prefix, 256 random bits, CRC32 checksum; HMAC storage."""

from __future__ import annotations

import hashlib
import hmac

from service.auth.keys import KEY_LENGTH, generate_key, hash_key, parse_key


def test_generated_keys_parse_and_differ() -> None:
    live, test = generate_key("live"), generate_key("test")
    assert live.plaintext.startswith("sk_live_")
    assert test.plaintext.startswith("sk_test_")
    assert len(live.plaintext) == KEY_LENGTH == 57
    assert live.prefix == live.plaintext[:12]
    assert parse_key(live.plaintext) == "live"
    assert parse_key(test.plaintext) == "test"
    assert len({generate_key("live").plaintext for _ in range(200)}) == 200


def test_mistyped_truncated_or_foreign_keys_are_rejected_without_lookup() -> None:
    key = generate_key("live").plaintext
    flipped = key[:20] + ("A" if key[20] != "A" else "B") + key[21:]
    assert parse_key(flipped) is None
    assert parse_key(key[:-1]) is None
    assert parse_key(key + "0") is None
    assert parse_key("sk_prod_" + key[8:]) is None
    assert parse_key(key[:-6] + "000000") is None
    assert parse_key(key.replace(key[30], "!")) is None


def test_only_an_hmac_is_stored() -> None:
    key = generate_key("test").plaintext
    digest = hash_key(b"secret", key)
    assert digest == hmac.new(b"secret", key.encode(), hashlib.sha256).digest()
    assert hash_key(b"other", key) != digest
