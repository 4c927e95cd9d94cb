"""ETags and the HTTP preconditions that compare them (RFC 9110): the one place for
If-Match (checked by use cases inside their transaction) and If-None-Match (checked by
handlers before they send a body). A base module, so every layer may use it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Rendered:
    """A document as the API answers it: JSON bytes and their ETag; and, once a client
    asked for it, the body gzipped (`gzipped`): a cached document is read again and
    again, and gzipping a 20 kB context cost several times its whole cached read."""

    body: bytes
    etag: str
    gzipped: bytes | None = field(default=None, compare=False, repr=False)

    def keep_gzipped(self, gzipped: bytes) -> None:
        """Remember the body gzipped (by the HTTP layer, which knows how it gzips)."""
        object.__setattr__(self, "gzipped", gzipped)

    @classmethod
    def of_text(cls, text: str) -> Rendered:
        """JSON rendered elsewhere (PostgreSQL): its tag is a digest of the bytes sent."""
        body = text.encode()
        return cls(body, etag_of_bytes(body))


def etag_of_bytes(body: bytes) -> str:
    """A strong ETag: a digest of the bytes given (a view's canonical JSON, sorted keys;
    or a body PostgreSQL rendered, as sent)."""
    return f'"{hashlib.blake2b(body, digest_size=16).hexdigest()}"'


def if_match_satisfied(header: str | None, current: str) -> bool:
    """RFC 9110 If-Match with strong comparison; no header means no precondition."""
    if header is None:
        return True
    candidates = [part.strip() for part in header.split(",")]
    return "*" in candidates or current in candidates


def _weak(tag: str) -> str:
    return tag[2:] if tag.startswith("W/") else tag


def none_match(header: str | None, current: str) -> bool:
    """RFC 9110 If-None-Match: true when the client's copy is current (weak comparison)."""
    if header is None:
        return False
    candidates = [_weak(part.strip()) for part in header.split(",")]
    return "*" in candidates or _weak(current) in candidates
