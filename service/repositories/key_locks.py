"""What a config or permission write locks (sql/queries/key_locks.sql,
lock_entry_keys): its key at the tenant written and at every ancestor of it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KeyWrite:
    # The ancestry path of the tenant written (of the parent, for a child being created).
    path: str
    key: str
    # False: the path's last tenant is held shared, as its ancestors are (a new child's
    # parent); True: held exclusively (the tenant whose entry is written).
    exclusive: bool = True
