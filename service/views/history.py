"""Answers of the history of the resolved view (docs/history.md)."""

from __future__ import annotations

from typing import Any, Literal
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


class RevertedEntry(View):
    kind: Literal["config", "permission"]
    tenant_id: UUID
    key: str
    # The entry put back (null: removed) and the one the revision had written (null: it
    # had removed it); sensitive values "***", expires_at present when the entry had one.
    restored: dict[str, Any] | None
    reverted: dict[str, Any] | None
    # Later revisions that changed the same key at the same tenant.
    later_revisions: list[int]


class RevisionRevert(View):
    revision: int
    dry_run: bool
    changes: list[RevertedEntry]
