"""Timestamps on the wire: UTC, milliseconds, Z (2026-11-22T06:04:05.123Z)."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(value: datetime) -> str:
    utc = value.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def iso_or_none(value: datetime | None) -> str | None:
    return None if value is None else iso(value)


def utcnow() -> datetime:
    return datetime.now(UTC)
