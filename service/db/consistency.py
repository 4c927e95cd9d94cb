"""Read-your-writes across requests: the X-Consistency-Token.

A write's answer carries the primary's WAL position read just after its commit (with
synchronous_commit on, the commit record lies at or before it). A read that sends the
token back is served only by a replica that has replayed at least that position, or by
the primary (service/db/replicas.py). The token is opaque to clients: a version byte
and the 64-bit position, base64url-encoded; only its form is checked.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

HEADER = "X-Consistency-Token"
_VERSION = b"\x01"
_REQUIRED: ContextVar[int | None] = ContextVar("consistency_required", default=None)
_PRIMARY_ONLY: ContextVar[bool] = ContextVar("consistency_primary_only", default=False)


class InvalidToken(ValueError):
    """The header is not a token this service issued (its form, not its position)."""


def encode_token(lsn: int) -> str:
    raw = _VERSION + lsn.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str) -> int:
    text = token.strip()
    if not 1 <= len(text) <= 32:
        raise InvalidToken("wrong length")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidToken("not base64url") from exc
    if len(raw) != 9 or raw[:1] != _VERSION:
        raise InvalidToken("unknown form")
    return int.from_bytes(raw[1:], "big")


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
