"""Duration text as DESIGN.md section 1 defines it ("90", "30s", "1 minute", "2 hours")."""

from __future__ import annotations

import re

_UNITS: dict[str, int] = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_PATTERN = re.compile(r"(\d{1,9})(?: ?([a-z]+))?")
MIN_SECONDS = 1
MAX_SECONDS = 86400


class InvalidDuration(ValueError):
    """The text is not a duration between one second and one day."""


def parse_duration(text: str) -> int:
    """Return the number of seconds the text names, or raise InvalidDuration."""
    match = _PATTERN.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    if match is None:
        raise InvalidDuration(
            f"{text!r} is not a duration: use seconds ('90') or '<n> <unit>' "
            "with unit s, m, h or d (e.g. '30 seconds', '1 minute')"
        )
    number, unit = int(match.group(1)), match.group(2)
    if unit is not None and unit not in _UNITS:
        raise InvalidDuration(f"unknown duration unit {unit!r}")
    seconds = number * (_UNITS[unit] if unit else 1)
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise InvalidDuration("a duration must be between 1 second and 1 day")
    return seconds
