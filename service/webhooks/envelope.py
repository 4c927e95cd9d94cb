"""What a delivery sends: the body of docs/api.md, Webhooks and its signed headers.

Secrets are decrypted here, per attempt, with the process's current encryptor (an
encryption-key rotation may have re-encrypted them since the delivery was queued), and
live only as long as the headers are being computed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson

from service.base.crypto import PURPOSE_WEBHOOK_SECRET, DecryptionError, Encryptor, webhook_aad
from service.base.timefmt import iso
from service.webhooks.signing import signed_headers


@dataclass(frozen=True, slots=True)
class SealedSecrets:
    """A webhook's encrypted secrets as stored (the previous one during an overlap)."""

    webhook_id: UUID
    encrypted: str
    previous_encrypted: str | None
    previous_expires_at: datetime | None


def seal_secret(encryptor: Encryptor, webhook_id: UUID, secret: str) -> str:
    return encryptor.encrypt(
        secret.encode(), purpose=PURPOSE_WEBHOOK_SECRET, aad=webhook_aad(webhook_id)
    )


def open_secrets(
    encryptor: Encryptor, sealed: SealedSecrets, now: datetime
) -> tuple[str, str | None]:
    """The current secret, and the previous one while its overlap lasts.

    Raises DecryptionError when no configured key opens the current secret; a previous
    secret that no longer opens is dropped (the current one still signs).
    """
    aad = webhook_aad(sealed.webhook_id)
    current = encryptor.decrypt(sealed.encrypted, purpose=PURPOSE_WEBHOOK_SECRET, aad=aad)
    previous: str | None = None
    if (
        sealed.previous_encrypted is not None
        and sealed.previous_expires_at is not None
        and sealed.previous_expires_at > now
    ):
        try:
            previous = encryptor.decrypt(
                sealed.previous_encrypted, purpose=PURPOSE_WEBHOOK_SECRET, aad=aad
            ).decode()
        except DecryptionError:
            previous = None  # an unreadable old secret only loses its own signature
    return current.decode(), previous


def event_body(
    event_id: UUID, event_type: str, created_at: datetime, data: dict[str, Any]
) -> bytes:
    """`{event_id, event, timestamp, data}`: the same bytes on every attempt of a delivery.
    `event_id` names the event (the same in every webhook's delivery of it, so receivers
    can drop repeats); the `webhook-id` header names the delivery."""
    return orjson.dumps(
        {
            "event_id": str(event_id),
            "event": event_type,
            "timestamp": iso(created_at),
            "data": data,
        }
    )


def signed_request(
    encryptor: Encryptor,
    sealed: SealedSecrets,
    *,
    delivery_id: UUID,
    event_type: str,
    body: bytes,
    now: datetime,
) -> dict[str, str]:
    """The headers of one attempt; webhook-timestamp is the attempt's time (replays age)."""
    secret, previous = open_secrets(encryptor, sealed, now)
    return signed_headers(
        secret=secret,
        previous_secret=previous,
        delivery_id=str(delivery_id),
        event_type=event_type,
        timestamp=int(time.time()),
        body=body,
    )
