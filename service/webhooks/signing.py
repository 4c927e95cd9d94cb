"""Webhook secrets and the two signatures every delivery carries.

- X-Service-Signature: `sha256=` + lowercase hex HMAC-SHA256 of the body, keyed with the
  secret's UTF-8 text (docs/api.md, Webhooks).
- Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
  keyed with the bytes after `whsec_` base64-decoded. During a rotation overlap it lists
  one signature per secret.

Secrets set from now on are all `whsec_` + standard base64 (check_secret), so the text a
caller holds verifies with the official libraries as is. Secrets stored before that rule
may be any text of 16 to 256 characters: they keep signing as they always did (the
Standard signature keyed with their UTF-8 bytes), so existing receivers keep working.
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
# Caller-chosen secrets (check_secret): the key's size as Standard Webhooks recommends,
# and the text lengths that follow from it.
MIN_KEY_BYTES = 24
MAX_KEY_BYTES = 64
MIN_SECRET_LENGTH = len(SECRET_PREFIX) + 4 * ((MIN_KEY_BYTES + 2) // 3)  # 38
MAX_SECRET_LENGTH = len(SECRET_PREFIX) + 4 * ((MAX_KEY_BYTES + 2) // 3)  # 94
# The same rule as a pattern (lengths apart), for schemas.
# Exactly check_secret's rule: 24 to 64 bytes, canonical padding (the bits a padded
# final character leaves unused are zero, so the text is what b64encode gives).
_B64 = "[A-Za-z0-9+/]"
_ONE_MORE = f"{_B64}[AQgw]=="  # one byte after the full groups
_TWO_MORE = f"{_B64}{{2}}[AEIMQUYcgkosw048]="  # two bytes after them
SECRET_PATTERN = (
    f"^whsec_(?:(?:{_B64}{{4}}){{8,20}}(?:{_ONE_MORE}|{_TWO_MORE})?"
    f"|(?:{_B64}{{4}}){{21}}(?:{_ONE_MORE})?)$"
)
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
    """A caller-chosen secret: `whsec_` + standard, padded base64 of 24 to 64 bytes, the
    one form every Standard Webhooks library decodes to the key the service signs with
    (they base64-decode whatever follows the prefix and silently drop `-` and `_`)."""
    key = _canonical_whsec(secret)
    if key is None or not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise InvalidSecret(
            f"must be {SECRET_PREFIX} followed by standard base64 (A-Z a-z 0-9 + /, padded "
            f"with =) of {MIN_KEY_BYTES} to {MAX_KEY_BYTES} bytes, the Standard Webhooks "
            "form; leave it out to have one generated"
        )


def _canonical_whsec(secret: str) -> bytes | None:
    if not secret.startswith(SECRET_PREFIX):
        return None
    body = secret[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None
    return key if base64.b64encode(key).decode() == body else None


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
