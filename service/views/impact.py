"""Views of the impact previews (dry runs; docs/decisions/context.md "Impact previews")."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from service.views.base import AlwaysTrue, View
from service.views.errors import FieldProblem


class PreviewRefusal(View):
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


class ResolvedValue(View):
    value: Any
    source_tenant_id: UUID
    locked: bool
    sensitive: bool


class ResolvedValueChange(View):
    tenant_id: UUID
    old: ResolvedValue | None
    new: ResolvedValue | None


class ShadowedEntry(View):
    tenant_id: UUID
    value: Any
    locked: bool
    sensitive: bool


class ConfigChangePreview(View):
    dry_run: AlwaysTrue
    tenant_id: UUID
    key: str
    change: Literal["set", "delete"]
    refused: PreviewRefusal | None
    changed_tenants: int
    changes: list[ResolvedValueChange]
    shadowed_entries: list[ShadowedEntry]
    shadowed_total: int


class ResolvedPolicy(View):
    value: bool
    mode: Literal["INHERIT", "LOCKED", "LOCAL"]
    source_tenant_id: UUID


class ResolvedPolicyChange(View):
    tenant_id: UUID
    old: ResolvedPolicy | None
    new: ResolvedPolicy | None


class ShadowedPolicy(View):
    tenant_id: UUID
    value: bool
    mode: Literal["INHERIT", "LOCKED", "LOCAL"]


class PermissionChangePreview(View):
    dry_run: AlwaysTrue
    tenant_id: UUID
    key: str
    change: Literal["set", "delete"]
    refused: PreviewRefusal | None
    changed_tenants: int
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
