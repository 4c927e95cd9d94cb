"""Typed values read from the environment, every problem collected at once (the settings
modules share this one reader)."""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Mapping

from service.base.durations import InvalidDuration, parse_duration

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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
        raw = self.source.get(name, "").strip()
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            self.errors.append(f"{name} must be an integer, got {raw!r}")
            return default
        if not low <= value <= high:
            self.errors.append(f"{name} must be between {low} and {high}")
            return default
        return value

    def number(self, name: str, default: float, low: float, high: float) -> float:
        raw = self.source.get(name, "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            self.errors.append(f"{name} must be a number, got {raw!r}")
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
        networks: list[IPNetwork] = []
        for part in self.text(name, "").split(","):
            if not part.strip():
                continue
            try:
                networks.append(ipaddress.ip_network(part.strip(), strict=False))
            except ValueError:
                self.errors.append(f"{name}: {part.strip()!r} is not a CIDR")
        return tuple(networks)

    def previous_keys(self, name: str) -> tuple[bytes, ...]:
        keys: list[bytes] = []
        for part in self.text(name, "").split(","):
            if not part.strip():
                continue
            try:
                keys.append(decode_encryption_key(part))
            except ValueError as exc:
                self.errors.append(f"{name}: an entry {exc}")
        return tuple(keys)
