"""JSON shapes of config entries and permission policies (DESIGN.md section 4)."""

from __future__ import annotations

from typing import Any

from service.repositories.config_entries import ConfigEntry
from service.repositories.permissions import PermissionPolicy
from service.timefmt import iso


def config_entry_json(entry: ConfigEntry, shown_value: Any) -> dict[str, Any]:
    """The entry with its value as the caller may see it ("***" unless revealed)."""
    return {
        "key": entry.key,
        "value": shown_value,
        "locked": entry.locked,
        "sensitive": entry.sensitive,
        "created_at": iso(entry.created_at),
        "updated_at": iso(entry.updated_at),
    }


def permission_json(policy: PermissionPolicy) -> dict[str, Any]:
    return {
        "key": policy.key,
        "value": policy.value,
        "mode": policy.mode,
        "created_at": iso(policy.created_at),
        "updated_at": iso(policy.updated_at),
    }
