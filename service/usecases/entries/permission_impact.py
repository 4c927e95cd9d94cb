"""Impact preview of a permission policy change (impact.py's shared path): the tenants
whose resolved policy would change, the descendants' own policies a LOCKED one would
override, and whether the write would be refused."""

from __future__ import annotations

from msgspec import UNSET

from service.base.errors import ServiceError
from service.repositories.impact import OwnPolicy, PolicyChange
from service.repositories.permissions import PermissionPolicyRow
from service.schemas.config import PermissionPreviewBody
from service.usecases.common.deps import Deps
from service.usecases.entries.impact import EntryImpact, ImpactKind
from service.usecases.entries.permissions import DEFAULT_MODE

# The own policy a set would leave: (value, mode).
Proposed = tuple[bool, str]


def _proposed(body: PermissionPreviewBody, before: PermissionPolicyRow | None) -> Proposed:
    assert body.value is not None  # checked by the schema
    mode = body.mode if body.mode is not UNSET else (before.mode if before else DEFAULT_MODE)
    return (body.value, mode)


def _not_found(key: str) -> ServiceError:
    # The preview's own wording (DELETE answers permission_not_found's), kept as it was.
    return ServiceError("PERMISSION_NOT_FOUND", f"permission key {key!r} not found")


class PermissionImpact(
    EntryImpact[PermissionPreviewBody, PermissionPolicyRow, Proposed, PolicyChange, OwnPolicy]
):
    def __init__(self, deps: Deps) -> None:
        impact = deps.repos.impact
        super().__init__(
            deps,
            ImpactKind(
                locked_code="PERMISSION_LOCKED",
                kind="permission",
                not_found=_not_found,
                get=deps.repos.permissions.get_permission_policy,
                find_locked=deps.repos.permissions.find_locked_permission_keys,
                proposed=_proposed,
                locks=lambda new: new[1] == "LOCKED",
                changes=impact.preview_permission_change,
                shadowed=impact.list_shadowed_permission_policies,
            ),
        )
