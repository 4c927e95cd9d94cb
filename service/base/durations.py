"""Duration text as docs/api.md, Conventions defines it ("90", "30s", "1 minute", "2 hours")."""

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


def _up_to(limit: int) -> str:
    """A regex of the decimal numbers 1..limit (no leading zeros)."""
    text = str(limit)
    options = [rf"[1-9]\d{{0,{len(text) - 2}}}"] if len(text) > 1 else []
    # Numbers as long as the limit: share a prefix, then one digit lower, then any.
    for i, digit in enumerate(text):
        low = 1 if i == 0 else 0
        if int(digit) > low:
            rest = len(text) - i - 1
            tail = rf"\d{{{rest}}}" if rest else ""
            options.append(f"{text[:i]}[{low}-{int(digit) - 1}]{tail}")
    options.append(text)
    return "(?:" + "|".join(options) + ")"


def _any_case(word: str) -> str:
    return "".join(f"[{c}{c.upper()}]" for c in word)


def _pattern() -> str:
    """The texts parse_duration accepts, as one regex (for the OpenAPI document and
    msgspec): 1 to 9 digits in all (leading zeros count), an optional space and a unit in
    any case, surrounding whitespace, and a total between MIN_SECONDS and MAX_SECONDS."""
    by_factor: dict[int, list[str]] = {}
    for unit, factor in _UNITS.items():
        by_factor.setdefault(factor, []).append(_any_case(unit))
    options = [f"{_up_to(MAX_SECONDS)}"]
    for factor, units in sorted(by_factor.items()):
        words = "|".join(sorted(units, key=len, reverse=True))
        options.append(f"{_up_to(MAX_SECONDS // factor)} ?(?:{words})")
    number = r"(?=\d{1,9}(?:\D|$))0*"
    return rf"^\s*{number}(?:{'|'.join(options)})\s*$"


DURATION_PATTERN = _pattern()
