"""Webhook secrets and the two signatures every delivery carries.

- X-Service-Signature: `sha256=` + lowercase hex HMAC-SHA256 of the body, keyed with the
  secret's UTF-8 text (the spec).
- Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
  keyed with the bytes after `whsec_` base64-decoded (or the secret's UTF-8 bytes when it
  is not of that form). During a rotation overlap it lists one signature per secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence

SECRET_PREFIX = "whsec_"  # noqa: S105 - the Standard Webhooks prefix, not a secret
SECRET_BYTES = 32
MIN_SECRET_LENGTH = 16
MAX_SECRET_LENGTH = 256
_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]+={0,2}$")


class InvalidSecret(ValueError):
    """A caller-chosen secret that cannot be used; str() says why."""


def generate_secret() -> str:
    """`whsec_` + base64 of 32 random bytes, drawn so the text has no `-` or `_`.

    The text is then the same in base64url (DESIGN.md) and standard base64, which is
    what the Standard Webhooks libraries decode (they would drop `-` and `_`).
    """
    while True:
        text = base64.urlsafe_b64encode(secrets.token_bytes(SECRET_BYTES)).decode()
        if "-" not in text and "_" not in text:
            return SECRET_PREFIX + text


def _decode_whsec(secret: str) -> bytes | None:
    body = secret[len(SECRET_PREFIX) :]
    if not _BASE64.match(body):
        return None
    body = body.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def check_secret(secret: str) -> None:
    """A caller-chosen secret: long enough, printable, and a valid whsec_ when it says so."""
    if not MIN_SECRET_LENGTH <= len(secret) <= MAX_SECRET_LENGTH:
        raise InvalidSecret(f"must be {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters long")
    if not secret.isprintable() or not secret.isascii() or any(c.isspace() for c in secret):
        raise InvalidSecret("must be printable ASCII without spaces")
    if secret.startswith(SECRET_PREFIX):
        key = _decode_whsec(secret)
        if key is None or not 24 <= len(key) <= 64:
            raise InvalidSecret("a whsec_ secret must be base64 of 24 to 64 bytes after the prefix")


def standard_key(secret: str) -> bytes:
    """The Standard Webhooks signing key of a secret."""
    if secret.startswith(SECRET_PREFIX):
        key = _decode_whsec(secret)
        if key:
            return key
    return secret.encode()


def service_signature(secret: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def standard_signature(secrets_: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """Space-separated `v1,<base64>` signatures, one per secret (current first)."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    parts = []
    for secret in secrets_:
        mac = hmac.new(standard_key(secret), signed, hashlib.sha256).digest()
        parts.append("v1," + base64.b64encode(mac).decode())
    return " ".join(parts)


def signed_headers(
    *,
    secret: str,
    previous_secret: str | None,
    delivery_id: str,
    event_type: str,
    timestamp: int,
    body: bytes,
) -> dict[str, str]:
    """The headers of one delivery request (values computed per attempt, never logged)."""
    keys = [secret] if previous_secret is None else [secret, previous_secret]
    return {
        "Content-Type": "application/json",
        "User-Agent": "tenant-service-webhooks/1",
        "X-Service-Signature": service_signature(secret, body),
        "X-Service-Event": event_type,
        "X-Service-Delivery": delivery_id,
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": standard_signature(keys, delivery_id, timestamp, body),
    }
