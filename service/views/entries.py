"""Views of a tenant's own entries (config entries, permission policies) and of its
resolved context (docs/api.md, inheritance)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from service.repositories.config_entries import ConfigEntryRow
from service.repositories.context import ResolvedContext
from service.repositories.permissions import PermissionPolicyRow
from service.schemas.config import PermissionMode
from service.schemas.tenants import IsolationStrategy
from service.views.base import Instant, View, instant, same_fields

# Present on an entry that expires (absent on one that stays).
Expiry = (
    Annotated[
        Instant,
        msgspec.Meta(
            description="Present on an entry that expires: the service removes it then "
            "(as a delete, audited as expired)."
        ),
    ]
    | msgspec.UnsetType
)


class ConfigEntry(View):
    key: str
    value: Any
    locked: bool
    sensitive: bool
    reveal_to_descendants: Annotated[
        bool,
        msgspec.Meta(
            description="The owner shares this sensitive value with admins of the tenants "
            "below: their ?reveal=true contexts decrypt it (default false: masked there)."
        ),
    ]
    created_at: Instant
    updated_at: Instant
    expires_at: Expiry = msgspec.UNSET

    @classmethod
    def of(cls, entry: ConfigEntryRow, shown_value: Any) -> ConfigEntry:
        """The entry with its value as the caller may see it ("***" unless revealed)."""
        expires_at = _expiry(entry.expires_at)
        return cls(**same_fields(cls, entry, value=shown_value, expires_at=expires_at))


class PermissionPolicy(View):
    key: str
    value: bool
    mode: PermissionMode
    created_at: Instant
    updated_at: Instant
    expires_at: Expiry = msgspec.UNSET

    @classmethod
    def of(cls, policy: PermissionPolicyRow) -> PermissionPolicy:
        return cls(**same_fields(cls, policy, expires_at=_expiry(policy.expires_at)))


class ResolvedConfigEntry(View):
    key: str
    value: Any
    source_tenant_id: UUID
    inherited: bool
    locked: bool
    # Only in ?reveal=true answers, on a sensitive value that stays "***".
    masked_reason: (
        Annotated[
            Literal["outside_caller_subtree"],
            msgspec.Meta(
                description="Present only in ?reveal=true answers, on a sensitive value left "
                "masked: `outside_caller_subtree` - it is inherited from a tenant above the "
                "caller's subtree whose owner has not set reveal_to_descendants."
            ),
        ]
        | msgspec.UnsetType
    ) = msgspec.UNSET
    expires_at: Expiry = msgspec.UNSET


class ResolvedPermission(View):
    key: str
    value: bool
    mode: PermissionMode
    source_tenant_id: UUID
    locked: bool
    delegated: bool
    expires_at: Expiry = msgspec.UNSET


class TenantContext(View):
    tenant_id: UUID
    ancestry_path: str
    depth: int
    isolation_strategy: IsolationStrategy
    resolved_config: dict[str, ResolvedConfigEntry]
    resolved_permissions: dict[str, ResolvedPermission]

    @classmethod
    def of(
        cls,
        ctx: ResolvedContext,
        shown_values: Mapping[str, Any],
        masked_outside: Collection[str] = (),
    ) -> TenantContext:
        """The context with each config value as the caller may see it (by key);
        `masked_outside` names the sensitive values a reveal left masked because their
        source lies above the caller's subtree."""
        config = {
            c.key: ResolvedConfigEntry(
                key=c.key,
                value=shown_values[c.key],
                source_tenant_id=c.source_tenant_id,
                inherited=c.source_tenant_id != ctx.id,
                locked=c.locked,
                masked_reason="outside_caller_subtree"
                if c.key in masked_outside
                else msgspec.UNSET,
                expires_at=_expiry(c.expires_at),
            )
            for c in ctx.config
        }
        permissions = {}
        for p in ctx.permissions:
            inherited = p.source_tenant_id != ctx.id
            permissions[p.key] = ResolvedPermission(
                key=p.key,
                value=p.value,
                mode=p.mode,  # type: ignore[arg-type]
                source_tenant_id=p.source_tenant_id,
                locked=p.mode == "LOCKED",
                # Inherited and still overridable here: this tenant may set its own policy.
                delegated=inherited and p.mode != "LOCKED",
                expires_at=_expiry(p.expires_at),
            )
        return cls(
            tenant_id=ctx.id,
            ancestry_path=ctx.ancestry_path,
            depth=ctx.depth,
            isolation_strategy=ctx.isolation_strategy,  # type: ignore[arg-type]
            resolved_config=config,
            resolved_permissions=permissions,
        )


def _expiry(value: datetime | None) -> Instant | msgspec.UnsetType:
    return msgspec.UNSET if value is None else instant(value)
