"""API key text: sk_live_/sk_test_, 43 base62 characters of 32 random bytes, then a
6-character base62 CRC32 of everything before it (as GitHub's tokens carry one), so a
mistyped key is refused without a database lookup and secret scanners can spot keys.
Only HMAC-SHA256(SERVICE_API_KEY_HMAC_SECRET, key) is ever stored.
"""

from __future__ import annotations

import hmac
import re
import secrets
import zlib
from dataclasses import dataclass
from typing import Literal

Environment = Literal["live", "test"]
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BODY = re.compile("[0-9A-Za-z]+")
BODY_LENGTH = 43  # ceil(256 / log2(62))
CHECKSUM_LENGTH = 6
PREFIX_LENGTH = 12
PREFIXES: dict[str, Environment] = {"sk_live_": "live", "sk_test_": "test"}
KEY_LENGTH = 8 + BODY_LENGTH + CHECKSUM_LENGTH


def default_environment(production: bool, accepted: tuple[str, ...]) -> Environment:
    """The environment of a key made without one: sk_live_ in production, sk_test_
    elsewhere (a development setup makes test keys only, the first key included), unless
    the deployment does not accept that environment (docs/decisions/keys.md)."""
    wanted: Environment = "live" if production else "test"
    if wanted in accepted or not accepted:
        return wanted
    return "test" if wanted == "live" else "live"


def base62(value: int, width: int) -> str:
    chars = []
    while value:
        value, rem = divmod(value, 62)
        chars.append(ALPHABET[rem])
    text = "".join(reversed(chars)) or "0"
    if len(text) > width:
        raise ValueError("value too large for width")
    return text.rjust(width, "0")


def checksum(text: str) -> str:
    return base62(zlib.crc32(text.encode()), CHECKSUM_LENGTH)


@dataclass(frozen=True, slots=True)
class NewKey:
    plaintext: str
    prefix: str
    environment: Environment


def generate_key(environment: Environment) -> NewKey:
    head = f"sk_{environment}_" + base62(
        int.from_bytes(secrets.token_bytes(32), "big"), BODY_LENGTH
    )
    key = head + checksum(head)
    return NewKey(key, key[:PREFIX_LENGTH], environment)


def parse_key(text: str) -> Environment | None:
    """The key's environment when its shape and checksum are right, else None."""
    if len(text) != KEY_LENGTH:
        return None
    environment = PREFIXES.get(text[:8])
    if environment is None:
        return None
    if _BODY.fullmatch(text, 8) is None:
        return None
    head, check = text[:-CHECKSUM_LENGTH], text[-CHECKSUM_LENGTH:]
    if not hmac.compare_digest(checksum(head), check):
        return None
    return environment


def hash_key(secret: bytes, key: str) -> bytes:
    return hmac.digest(secret, key.encode(), "sha256")  # one C call, no HMAC object
