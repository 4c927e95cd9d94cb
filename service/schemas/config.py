"""Bodies and query strings of config entries, permission policies, context and the
encryption-key rotation."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec
from msgspec import UNSET, UnsetType

from service.base.errors import validation_error
from service.base.timefmt import utcnow
from service.schemas.common import NonNull, Strict, check_config_value
from service.schemas.times import check_utc

PermissionMode = Literal["INHERIT", "LOCKED", "LOCAL"]
Expiry = Annotated[
    datetime,
    msgspec.Meta(
        tz=True,
        description="RFC 3339 instant in the future: the service removes the entry then "
        "(a delete by the service, audited as expired). Omitted or null: it stays.",
    ),
]


def check_expiry(value: datetime | None) -> None:
    check_utc(value, "expires_at")
    if value is not None and value <= utcnow():
        raise ValueError("expires_at: must lie in the future")


_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,127}")
# Base64 (standard alphabet, padded) of exactly 32 bytes, as decode_encryption_key
# accepts it (and names the problem): 43 characters and one `=`, surrounding whitespace
# ignored.
ENCRYPTION_KEY_PATTERN = r"^\s*[A-Za-z0-9+/]{43}=\s*$"
KeyText = Annotated[
    str,
    msgspec.Meta(
        min_length=1, max_length=256, extra_json_schema={"pattern": ENCRYPTION_KEY_PATTERN}
    ),
]


def entry_key(raw: str) -> str:
    """A config or permission key from a path, or 400 (same pattern as the schema)."""
    if _KEY.fullmatch(raw) is None:
        raise validation_error("key", "must match ^[A-Za-z][A-Za-z0-9_.:-]{0,127}$")
    return raw


class ConfigPut(Strict):
    value: NonNull
    # Omitted on an existing entry: it keeps its lock and sensitivity (so a secret is
    # never turned into plain text by forgetting a flag). New entries: both false.
    locked: bool | UnsetType = UNSET
    sensitive: bool | UnsetType = UNSET
    # Omitted on an existing entry: kept (new entries: false).
    reveal_to_descendants: (
        Annotated[
            bool,
            msgspec.Meta(
                description="Share this sensitive value with admins of the tenants below: "
                "their ?reveal=true contexts decrypt it. Default false (masked there, with "
                "masked_reason). true needs the admin scope; omitted keeps the current value."
            ),
        ]
        | UnsetType
    ) = UNSET
    # A temporary override: removed by the service at that instant (future). Omitted or
    # null: the entry stays (a PUT replaces an earlier expiry too).
    expires_at: Expiry | None = None

    def __post_init__(self) -> None:
        if self.value is None:
            raise ValueError("value: must not be null (DELETE removes an entry)")
        check_config_value(self.value, "value")
        check_expiry(self.expires_at)


class PermissionPut(Strict):
    value: bool
    # Omitted on an existing policy: it keeps its mode. New policies: INHERIT.
    mode: PermissionMode | UnsetType = UNSET
    # A temporary override: removed by the service at that instant (future). Omitted or
    # null: the entry stays (a PUT replaces an earlier expiry too).
    expires_at: Expiry | None = None

    def __post_init__(self) -> None:
        check_expiry(self.expires_at)


class RevealQuery(Strict):
    reveal: bool = False


class RotateEncryptionKey(Strict):
    old_key: KeyText
    new_key: KeyText


class ConfigPreviewBody(Strict):
    """POST .../config/{key}/preview: the change to preview, as PUT or DELETE would make it."""

    change: Literal["set", "delete"]
    value: Any = None
    locked: bool | UnsetType = UNSET
    sensitive: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.change == "set":
            if self.value is None:
                raise ValueError("value: required to preview a set")
            check_config_value(self.value, "value")
        elif self.value is not None or self.locked is not UNSET or self.sensitive is not UNSET:
            raise ValueError("change: a delete takes no value, locked or sensitive")


class PreviewQuery(Strict):
    """A page of the changed tenants (cursor: the X-Next-Cursor of the page before)."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    cursor: UUID | None = None


class PermissionPreviewBody(Strict):
    """POST .../permissions/{key}/preview: the change to preview, as PUT or DELETE would."""

    change: Literal["set", "delete"]
    value: bool | None = None
    mode: PermissionMode | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.change == "set" and self.value is None:
            raise ValueError("value: required to preview a set")
        if self.change == "delete" and (self.value is not None or self.mode is not UNSET):
            raise ValueError("change: a delete takes no value or mode")
