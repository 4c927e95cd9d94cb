"""Consent request bodies and query strings."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from service.schemas.common import Strict, check_anchored, check_json
from service.schemas.times import AwareDatetime, check_utc

PURPOSE_PATTERN = r"^[a-z][a-z0-9_.-]{0,63}$"
Purpose = Annotated[str, msgspec.Meta(pattern=PURPOSE_PATTERN, max_length=64)]
MAX_METADATA_BYTES = 16 * 1024


class ConsentGrant(Strict):
    purpose: Purpose
    expires_at: AwareDatetime | None = None
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_anchored(self.purpose, "purpose")
        check_utc(self.expires_at, "expires_at")
        if self.metadata is not None:
            check_json(self.metadata, "metadata")
            if len(msgspec.json.encode(self.metadata)) > MAX_METADATA_BYTES:
                raise ValueError("metadata: larger than 16 KiB")


class ConsentListQuery(Strict):
    purpose: Purpose | None = None

    def __post_init__(self) -> None:
        if self.purpose is not None:
            check_anchored(self.purpose, "purpose")


class ConsentPath(Strict):
    """The purpose in DELETE /consent/{purpose}, validated like the body field."""

    purpose: Purpose

    def __post_init__(self) -> None:
        check_anchored(self.purpose, "purpose")
