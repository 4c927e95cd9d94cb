"""The impact of a list of changes: each tenant whose resolved context differs after
them, key by key, and the digest of that affected set (docs/change-requests.md).

The affected set is what the digest covers: which tenants, which config and
permission keys, and whether a tenant's position or state changes; not the values,
so a value changed elsewhere meanwhile is no drift, while a move or a new lock that
widens or narrows the blast radius is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A tenant's masked context document (parsed) and its state."""

    document: dict[str, Any]
    status: str


def diff(before: Mapping[UUID, Snapshot], after: Mapping[UUID, Snapshot]) -> list[dict[str, Any]]:
    """One entry per tenant whose context or state differs, in path order (after)."""
    entries: list[tuple[str, dict[str, Any]]] = []
    for tenant_id in before.keys() | after.keys():
        old, new = before.get(tenant_id), after.get(tenant_id)
        entry: dict[str, Any] = {"tenant_id": str(tenant_id)}
        for section, name in (("resolved_config", "config"),
                              ("resolved_permissions", "permissions")):  # fmt: skip
            olds = old.document.get(section, {}) if old else {}
            news = new.document.get(section, {}) if new else {}
            changed = sorted(k for k in olds.keys() | news.keys() if olds.get(k) != news.get(k))
            keys = {k: {"before": olds.get(k), "after": news.get(k)} for k in changed}
            if keys:
                entry[name] = keys
        old_path = old.document.get("ancestry_path") if old else None
        new_path = new.document.get("ancestry_path") if new else None
        if old_path != new_path:
            entry["ancestry_path"] = {"before": old_path, "after": new_path}
        old_status = old.status if old else None
        new_status = new.status if new else None
        if old_status != new_status:
            entry["status"] = {"before": old_status, "after": new_status}
        if len(entry) > 1:
            entries.append((str(new_path or old_path or ""), entry))
    entries.sort(key=lambda item: (item[0], item[1]["tenant_id"]))
    return [entry for _, entry in entries]


def affected_set(impact: Iterable[dict[str, Any]]) -> set[str]:
    """The impact as members of the affected set: tenant, what, and key."""
    members: set[str] = set()
    for entry in impact:
        tenant = entry["tenant_id"]
        members.update(f"{tenant} config {k}" for k in entry.get("config", {}))
        members.update(f"{tenant} permission {k}" for k in entry.get("permissions", {}))
        if "ancestry_path" in entry:
            members.add(f"{tenant} position")
        if "status" in entry:
            members.add(f"{tenant} status")
    return members


def digest(impact: Iterable[dict[str, Any]]) -> str:
    """sha256 (hex) of the sorted affected set."""
    text = "\n".join(sorted(affected_set(impact)))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def drift(approved: Iterable[dict[str, Any]], now: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """What entered and what left the affected set since approval."""
    old, new = affected_set(approved), affected_set(now)
    return {"added": [_member(m) for m in sorted(new - old)],
            "removed": [_member(m) for m in sorted(old - new)]}  # fmt: skip


def _member(text: str) -> dict[str, Any]:
    tenant, what, *key = text.split(" ", 2)
    return {"tenant_id": tenant, "what": what, **({"key": key[0]} if key else {})}


def parse(document: str) -> dict[str, Any]:
    parsed: dict[str, Any] = orjson.loads(document)
    return parsed
