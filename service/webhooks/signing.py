"""Webhook secrets and the two signatures every delivery carries.

A secret is any text of 1 to 1024 characters (the caller's choice, or generated). Each
header has its own key, worked out from that one text:

- X-Service-Signature: `sha256=` + lowercase hex HMAC-SHA256 of the body, keyed with the
  secret's UTF-8 bytes, whatever the text is (docs/api.md, Webhooks).
- Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
  keyed with `standard_key(secret)`: the bytes a `whsec_` text base64-decodes to (the
  Standard Webhooks form: generated secrets have it), otherwise the secret's UTF-8 bytes.
  `standard_webhooks_secret(secret)` is `whsec_` + standard base64 of that key, the
  value a receiver passes to the official libraries as is. During a rotation overlap the
  header lists one signature per secret.
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
# Caller-chosen secrets (check_secret): any text of these lengths, in characters.
MIN_SECRET_LENGTH = 1
MAX_SECRET_LENGTH = 1024
# What follows `whsec_` in a text taken as the Standard Webhooks form: base64 or
# base64url, padding optional (what the service has always decoded there).
_BASE64 = re.compile(r"^[A-Za-z0-9+/_-]+={0,2}$")


class InvalidSecret(ValueError):
    """A caller-chosen secret that cannot be used; str() says why."""


def generate_secret() -> str:
    """`whsec_` + base64 of 32 random bytes, drawn so the text has no `-` or `_`.

    The text is then the same in base64url and standard base64, which is
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
    """A caller-chosen secret: any text of MIN_SECRET_LENGTH to MAX_SECRET_LENGTH
    characters (both headers can be keyed with any text; see the module's docstring)."""
    if not MIN_SECRET_LENGTH <= len(secret) <= MAX_SECRET_LENGTH:
        raise InvalidSecret(
            f"must be {MIN_SECRET_LENGTH} to {MAX_SECRET_LENGTH} characters; leave it out "
            "to have one generated"
        )


def standard_key(secret: str) -> bytes:
    """The Standard Webhooks signing key of a secret."""
    if secret.startswith(SECRET_PREFIX):
        key = _decode_whsec(secret)
        if key:
            return key
    return secret.encode()


def standard_webhooks_secret(secret: str) -> str:
    """The secret in the form the official Standard Webhooks libraries take as is:
    `whsec_` + standard base64 of its Standard key (a generated secret is its own form)."""
    return SECRET_PREFIX + base64.b64encode(standard_key(secret)).decode()


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
