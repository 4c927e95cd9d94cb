"""Timestamps in requests: an offset is required, and the instant must exist in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import msgspec

# RFC 3339 with an offset (`Z` or `+02:00`); a bare local time is ambiguous.
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


def check_utc(value: datetime | None, field: str) -> None:
    """0001-01-01T00:00:00+01:00 parses but lies before year 1 in UTC: refuse it here
    rather than fail when the database driver converts it."""
    if value is None:
        return
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{field}: out of range") from None
