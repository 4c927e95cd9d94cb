"""Views of the impact previews (dry runs; docs/decisions/context.md "Impact previews")."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from service.base.errors import CONSTRAINT_CODES, ServiceError
from service.repositories.impact import (
    OwnEntry,
    OwnPolicy,
    Policy,
    PolicyChange,
    Resolved,
    ResolvedChange,
)
from service.views.base import SENSITIVE_MASK, AlwaysTrue, View
from service.views.errors import FieldProblem


def _shown(value: Any, sensitive: bool) -> Any:
    return SENSITIVE_MASK if sensitive else value


class PreviewRefusal(View, omit_defaults=True):
    code: Literal[
        "CONFIG_LOCKED",
        "CONFIG_NOT_FOUND",
        "PERMISSION_LOCKED",
        "PERMISSION_NOT_FOUND",
        "CYCLE_DETECTED",
        "DEPTH_LIMIT_EXCEEDED",
        "CONFIG_SCHEMA_VIOLATION",
        "CONFIG_SCHEMA_CONFLICT",
        "BUDGET_EXCEEDED",
        "BUDGET_NOT_NUMERIC",
    ]
    message: str
    # Schema and budget refusals: the deciding or breaking tenants, as the error body has.
    details: list[FieldProblem] | None = None

    @classmethod
    def of(cls, error: ServiceError | None) -> PreviewRefusal | None:
        """The error the real change would answer: its code and message, and the details
        of a schema or budget refusal."""
        if error is None:
            return None
        details = None
        if error.details and error.code in CONSTRAINT_CODES:
            details = [FieldProblem.of(d) for d in error.details]
        return cls(code=error.code, message=error.message, details=details)  # type: ignore[arg-type]


class ResolvedValue(View):
    value: Any
    source_tenant_id: UUID
    locked: bool
    sensitive: bool

    @classmethod
    def of(cls, r: Resolved | None) -> ResolvedValue | None:
        if r is None:
            return None
        return cls(
            value=_shown(r.value, r.sensitive),
            source_tenant_id=r.source_tenant_id,
            locked=r.locked,
            sensitive=r.sensitive,
        )


class ResolvedValueChange(View):
    tenant_id: UUID
    old: ResolvedValue | None
    new: ResolvedValue | None

    @classmethod
    def of(cls, c: ResolvedChange) -> ResolvedValueChange:
        return cls(tenant_id=c.tenant_id, old=ResolvedValue.of(c.old), new=ResolvedValue.of(c.new))


class ShadowedEntry(View):
    tenant_id: UUID
    value: Any
    locked: bool
    sensitive: bool

    @classmethod
    def of(cls, e: OwnEntry) -> ShadowedEntry:
        return cls(
            tenant_id=e.tenant_id,
            value=_shown(e.value, e.sensitive),
            locked=e.locked,
            sensitive=e.sensitive,
        )


class _EntryChangePreview(View):
    # What a preview of a config entry and of a permission policy both answer first.
    dry_run: AlwaysTrue
    tenant_id: UUID
    key: str
    change: Literal["set", "delete"]
    refused: PreviewRefusal | None
    changed_tenants: int


class ConfigChangePreview(_EntryChangePreview):
    changes: list[ResolvedValueChange]
    shadowed_entries: list[ShadowedEntry]
    shadowed_total: int


class ResolvedPolicy(View):
    value: bool
    mode: Literal["INHERIT", "LOCKED", "LOCAL"]
    source_tenant_id: UUID

    @classmethod
    def of(cls, p: Policy | None) -> ResolvedPolicy | None:
        if p is None:
            return None
        return cls(value=p.value, mode=p.mode, source_tenant_id=p.source_tenant_id)  # type: ignore[arg-type]


class ResolvedPolicyChange(View):
    tenant_id: UUID
    old: ResolvedPolicy | None
    new: ResolvedPolicy | None

    @classmethod
    def of(cls, c: PolicyChange) -> ResolvedPolicyChange:
        return cls(
            tenant_id=c.tenant_id, old=ResolvedPolicy.of(c.old), new=ResolvedPolicy.of(c.new)
        )


class ShadowedPolicy(View):
    tenant_id: UUID
    value: bool
    mode: Literal["INHERIT", "LOCKED", "LOCAL"]

    @classmethod
    def of(cls, p: OwnPolicy) -> ShadowedPolicy:
        return cls(tenant_id=p.tenant_id, value=p.value, mode=p.mode)  # type: ignore[arg-type]


class PermissionChangePreview(_EntryChangePreview):
    changes: list[ResolvedPolicyChange]
    shadowed_policies: list[ShadowedPolicy]
    shadowed_total: int


class MovedEntry(View):
    kind: Literal["config", "permission"]
    key: str
    # config: {value, source_tenant_id, locked, sensitive}; permission: {value,
    # source_tenant_id, mode}; null: unset
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    shadows_own: bool


class MovedTenant(View):
    tenant_id: UUID
    entries: list[MovedEntry]


class MovePreview(View):
    dry_run: AlwaysTrue
    tenant_id: UUID
    new_parent_id: UUID | None
    refused: PreviewRefusal | None
    changed_tenants: int
    changes: list[MovedTenant]


def move_preview(
    tenant_id: UUID,
    new_parent_id: UUID | None,
    refused: ServiceError | None,
    changed_tenants: int,
    changes: list[tuple[UUID, list[dict[str, Any]]]],
) -> dict[str, Any]:
    """A MovePreview, built as plain JSON: each changed entry keeps the key order of the
    statement's jsonb object (key, new, old, kind), which MovedEntry would reorder, and
    gains `shadows_own` when a lock of a new ancestor overrides the tenant's own entry."""
    return {
        "dry_run": True,
        "tenant_id": tenant_id,
        "new_parent_id": new_parent_id,
        "refused": PreviewRefusal.of(refused),
        "changed_tenants": changed_tenants,
        "changes": [
            {"tenant_id": t, "entries": [_moved_entry(t, e) for e in entries]}
            for t, entries in changes
        ],
    }


def _moved_entry(tenant_id: UUID, e: dict[str, Any]) -> dict[str, Any]:
    old, new = e["old"], e["new"]
    own = str(tenant_id)
    shadows = (
        old is not None and new is not None and old["source_tenant_id"] == own
        and new["source_tenant_id"] != own
    )  # fmt: skip
    return {**e, "shadows_own": shadows}
