"""Answers of the history of the resolved view (docs/history.md)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import msgspec

from service.views.base import View
from service.views.entries import ResolvedConfigEntry, ResolvedPermission

Change = Literal["added", "removed", "changed"]


class ConfigDifference(View):
    key: str
    change: Change
    # The entry as the context showed it at `from` and at `to` (null: absent).
    before: ResolvedConfigEntry | None
    after: ResolvedConfigEntry | None
    # The last revision in (from, to] that changed it, and its first audit entry (null:
    # a change without one, e.g. a DBA's statement).
    revision: int
    audit_id: UUID | None


class PermissionDifference(View):
    key: str
    change: Change
    before: ResolvedPermission | None
    after: ResolvedPermission | None
    revision: int
    audit_id: UUID | None


class ContextDiff(View):
    # Both ends as revisions (a time names the last revision committed at or before it).
    from_: int = msgspec.field(name="from")
    to: int
    config: list[ConfigDifference]
    permissions: list[PermissionDifference]
