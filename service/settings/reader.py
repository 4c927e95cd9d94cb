"""Typed values read from the environment, every problem collected at once (the settings
modules share this one reader)."""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Callable, Mapping
from typing import TypeVar

from service.base.durations import InvalidDuration, parse_duration

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_N = TypeVar("_N", int, float)
_E = TypeVar("_E")


def decode_encryption_key(text: str) -> bytes:
    """Base64 text of exactly 32 bytes, as SERVICE_ENCRYPTION_KEY and the rotation body use."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("must be base64") from exc
    if len(raw) != 32:
        raise ValueError("must be base64 of exactly 32 bytes")
    return raw


class EnvironmentReader:
    """Reads typed values from the environment and collects every problem at once."""

    def __init__(self, source: Mapping[str, str]) -> None:
        self.source = source
        self.errors: list[str] = []

    def text(self, name: str, default: str) -> str:
        value = self.source.get(name)
        return default if value is None or value.strip() == "" else value.strip()

    def optional(self, name: str) -> str | None:
        value = self.source.get(name, "").strip()
        return value or None

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        return self._bounded(name, default, low, high, int, "an integer")

    def number(self, name: str, default: float, low: float, high: float) -> float:
        return self._bounded(name, default, low, high, float, "a number")

    def _bounded(
        self, name: str, default: _N, low: _N, high: _N, parse: Callable[[str], _N], what: str
    ) -> _N:
        raw = self.source.get(name, "").strip()
        if not raw:
            return default
        try:
            value = parse(raw)
        except ValueError:
            self.errors.append(f"{name} must be {what}, got {raw!r}")
            return default
        if not low <= value <= high:
            self.errors.append(f"{name} must be between {low} and {high}")
            return default
        return value

    def boolean(self, name: str, default: bool) -> bool:
        raw = self.source.get(name)
        if raw is None:
            return default
        lowered = raw.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        self.errors.append(f"{name} must be true or false, got {raw!r}")
        return default

    def choice(
        self, name: str, allowed: tuple[str, ...], default: str, *, lower: bool = False
    ) -> str:
        raw = self.text(name, default)
        if lower:
            raw = raw.lower()
        if raw not in allowed:
            self.errors.append(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
            return default
        return raw

    def subset(
        self, name: str, allowed: tuple[str, ...], default: tuple[str, ...]
    ) -> tuple[str, ...]:
        """A comma-separated, non-empty subset of allowed."""
        raw = self.text(name, ",".join(default))
        chosen = tuple(dict.fromkeys(p.strip().lower() for p in raw.split(",") if p.strip()))
        if not chosen or any(c not in allowed for c in chosen):
            self.errors.append(f"{name} must list some of {', '.join(allowed)}, got {raw!r}")
            return default
        return chosen

    def duration(self, name: str, default: str) -> int:
        raw = self.text(name, default)
        try:
            return parse_duration(raw)
        except InvalidDuration as exc:
            self.errors.append(f"{name}: {exc}")
            return parse_duration(default)

    def cidrs(self, name: str) -> tuple[IPNetwork, ...]:
        return self._entries(
            name,
            lambda part: ipaddress.ip_network(part, strict=False),
            lambda part, _exc: f"{part!r} is not a CIDR",
        )

    def previous_keys(self, name: str) -> tuple[bytes, ...]:
        return self._entries(name, decode_encryption_key, lambda _part, exc: f"an entry {exc}")

    def _entries(
        self,
        name: str,
        parse: Callable[[str], _E],
        problem: Callable[[str, ValueError], str],
    ) -> tuple[_E, ...]:
        """A comma-separated list, each entry parsed; an entry that does not parse is an
        error (`NAME: <problem>`) and left out."""
        entries: list[_E] = []
        for part in self.text(name, "").split(","):
            if not part.strip():
                continue
            try:
                entries.append(parse(part.strip()))
            except ValueError as exc:
                self.errors.append(f"{name}: {problem(part.strip(), exc)}")
        return tuple(entries)
