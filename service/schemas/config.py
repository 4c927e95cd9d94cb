"""Bodies and query strings of config entries, permission policies, context and the
encryption-key rotation."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from service.errors import validation_error
from service.schemas.common import Strict, check_config_value

PermissionMode = Literal["INHERIT", "LOCKED", "LOCAL"]
_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]{0,127}")
# Base64 of 32 bytes is 44 characters; anything much longer is not a key.
KeyText = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


def entry_key(raw: str) -> str:
    """A config or permission key from a path, or 400 (same pattern as the schema)."""
    if _KEY.fullmatch(raw) is None:
        raise validation_error("key", "must match ^[A-Za-z][A-Za-z0-9_.:-]{0,127}$")
    return raw


class ConfigPut(Strict):
    value: Any
    # Omitted on an existing entry: it keeps its lock and sensitivity (so a secret is
    # never turned into plain text by forgetting a flag). New entries: both false.
    locked: bool | UnsetType = UNSET
    sensitive: bool | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.value is None:
            raise ValueError("value: must not be null (DELETE removes an entry)")
        check_config_value(self.value, "value")


class PermissionPut(Strict):
    value: bool
    # Omitted on an existing policy: it keeps its mode. New policies: INHERIT.
    mode: PermissionMode | UnsetType = UNSET


class RevealQuery(Strict):
    reveal: bool = False


class RotateEncryptionKey(Strict):
    old_key: KeyText
    new_key: KeyText
