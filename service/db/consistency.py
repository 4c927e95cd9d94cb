"""Read-your-writes across requests: the X-Consistency-Token.

A write's answer carries the primary's WAL position read just after its commit (with
synchronous_commit on, the commit record lies at or before it). A read that sends the
token back is served only by a replica that has replayed at least that position, or by
the primary (service/db/replicas.py). The token is opaque to clients: a version byte,
the 64-bit position and an HMAC-SHA256 tag (16 bytes) over both, base64url-encoded. The
tag's key is derived from SERVICE_API_KEY_HMAC_SECRET under a label of its own, so every
process of a deployment accepts the others' tokens and no client can make one up (a
far-future position would pin its reads to the primary and past every cache). Tokens of
the first form (version 1, no tag) are refused like any other token not issued here.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

HEADER = "X-Consistency-Token"
_VERSION = b"\x02"
_TAG_BYTES = 16
_LABEL = b"tenant-service consistency-token v2"
_REQUIRED: ContextVar[int | None] = ContextVar("consistency_required", default=None)
_PRIMARY_ONLY: ContextVar[bool] = ContextVar("consistency_primary_only", default=False)


class InvalidToken(ValueError):
    """The header is not a token this service issued (its form, or its tag)."""


@functools.lru_cache(maxsize=4)
def token_key(secret: bytes) -> bytes:
    """The tag key: SERVICE_API_KEY_HMAC_SECRET, separated from its other uses."""
    return hmac.new(secret, _LABEL, hashlib.sha256).digest()


def _tag(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, body, hashlib.sha256).digest()[:_TAG_BYTES]


def encode_token(lsn: int, key: bytes) -> str:
    body = _VERSION + lsn.to_bytes(8, "big")
    return base64.urlsafe_b64encode(body + _tag(key, body)).decode().rstrip("=")


def decode_token(token: str, key: bytes) -> int:
    """The position a token asks for."""
    text = token.strip()
    if not 1 <= len(text) <= 48:
        raise InvalidToken("wrong length")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken("not base64url") from exc
    if len(raw) != 9 + _TAG_BYTES or raw[:1] != _VERSION:
        raise InvalidToken("unknown form")
    body, tag = raw[:9], raw[9:]
    if not hmac.compare_digest(tag, _tag(key, body)):
        raise InvalidToken("not issued here")
    return int.from_bytes(body[1:], "big")


def required_position() -> int | None:
    """The WAL position the current request's reads must see, if it sent a token."""
    return _REQUIRED.get()


def primary_only() -> bool:
    """True while serving a write: every read of the request sees the primary."""
    return _PRIMARY_ONLY.get()


@contextmanager
def requiring(lsn: int | None, *, writing: bool = False) -> Iterator[None]:
    """The request's reads need position `lsn`; a write request's reads (the answer it
    renders after its change, say) all go to the primary."""
    token = _REQUIRED.set(lsn)
    primary = _PRIMARY_ONLY.set(writing)
    try:
        yield
    finally:
        _PRIMARY_ONLY.reset(primary)
        _REQUIRED.reset(token)
