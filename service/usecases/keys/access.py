"""Rules every API-key and role use case applies: who may see a key or role, and that
nobody grants more than it holds (docs/api.md, Authentication and scopes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import UUID

import asyncpg

from service.auth.principal import Principal
from service.base.durations import InvalidDuration, parse_duration
from service.base.errors import RetryTransaction, ServiceError, validation_error
from service.base.timefmt import iso_or_none
from service.caches.key_cache import KeyCache
from service.db.pool import Database
from service.repositories.api_keys import ApiKeyRow, StoredKey
from service.repositories.roles import RoleRow
from service.repositories.tenants import TenantNode, TenantsRepository
from service.usecases.common.deps import Deps
from service.usecases.common.tenant_access import visible_active

T = TypeVar("T")


def api_key_not_found() -> ServiceError:
    return ServiceError("API_KEY_NOT_FOUND", "API key not found")


def role_not_found() -> ServiceError:
    return ServiceError("ROLE_NOT_FOUND", "role not found")


def global_denied(what: str) -> ServiceError:
    return ServiceError(
        "TENANT_ACCESS_DENIED", f"global {what} are outside a tenant-scoped caller's reach"
    )


def _reaches(principal: Principal, tenant_id: UUID | None, tenant_path: str | None) -> bool:
    if tenant_id is None:
        return True
    return tenant_path is not None and principal.can_see_path(tenant_path)


def visible_key(principal: Principal, stored: StoredKey | None) -> StoredKey:
    """The key, 404 when missing or outside the caller's subtree, 403 when it is a global
    key and the caller is tenant-scoped."""
    if stored is None or not _reaches(principal, stored.key.tenant_id, stored.tenant_path):
        raise api_key_not_found()
    if stored.key.tenant_id is None and principal.is_scoped:
        raise global_denied("API keys")
    return stored


def visible_role(principal: Principal, role: RoleRow | None) -> RoleRow:
    if role is None or not _reaches(principal, role.tenant_id, role.tenant_path):
        raise role_not_found()
    if role.tenant_id is None and principal.is_scoped:
        raise global_denied("roles")
    return role


def require_scopes(principal: Principal, scopes: Iterable[str], doing: str) -> None:
    """403 unless the caller holds every one of the scopes."""
    missing = sorted(set(scopes) - principal.scopes)
    if missing:
        raise ServiceError(
            "INSUFFICIENT_SCOPE",
            f"{doing} needs scopes you do not hold: {', '.join(missing)}",
        )


def held_by(stored: StoredKey) -> set[str]:
    """Every scope a key has or would fall back to: its own and its role's."""
    return set(stored.key.scopes) | set(stored.effective_scopes)


def require_usable(stored: StoredKey, doing: str) -> None:
    """409 for a key that is revoked or scheduled to be (rotated, in its grace period)."""
    if stored.key.revoked_at is not None:
        state = "revoked" if stored.key.revoked_at <= datetime.now(UTC) else "being rotated out"
        raise ServiceError("API_KEY_REVOKED", f"cannot {doing}: the key is {state}")


async def owning_tenant(
    conn: asyncpg.Connection,
    tenants: TenantsRepository,
    principal: Principal,
    tenant_id: UUID | None,
    what: str,
) -> TenantNode | None:
    """The tenant a new key or role will belong to (None: global, for unscoped callers)."""
    if tenant_id is None:
        if principal.is_scoped:
            raise ServiceError(
                "TENANT_ACCESS_DENIED", f"a tenant-scoped caller cannot create global {what}"
            )
        return None
    nodes = await tenants.get_tenant_nodes(conn, [tenant_id])
    return visible_active(principal, nodes.get(tenant_id))


def role_fits_key(role: RoleRow, key_tenant_path: str | None) -> None:
    """A tenant role serves only keys of that tenant or its descendants."""
    if role.tenant_id is None:
        return
    if key_tenant_path is None or f"/{role.tenant_id}" not in key_tenant_path:
        raise ServiceError(
            "TENANT_ACCESS_DENIED",
            "a tenant role can be assigned only to keys of that tenant or its descendants",
        )


async def settled_path(
    conn: asyncpg.Connection, tenants: TenantsRepository, tenant_id: UUID | None, path: str | None
) -> str | None:
    """The ancestry path of a key's tenant, with its tree root share-locked so no move
    changes it before the commit (a move locks roots exclusively, then refuses to strand
    keys): a role assignment judged on it stays true."""
    if tenant_id is None or path is None:
        return path
    root = UUID(path.split("/")[1])
    await tenants.lock_tree_roots_shared(conn, [root])
    node = (await tenants.get_tenant_nodes(conn, [tenant_id])).get(tenant_id)
    if node is None or node.root_id != root:
        raise RetryTransaction  # moved to another tree before the lock
    return node.ancestry_path


def window_seconds(text: str | None) -> int | None:
    """Seconds of a rate_limit_window text, or 400 naming the field."""
    if text is None:
        return None
    try:
        return parse_duration(text)
    except InvalidDuration as exc:
        raise validation_error("rate_limit_window", str(exc)) from None


def check_expiry(expires_at: datetime | None) -> None:
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise validation_error("expires_at", "must be in the future")


def key_audit_view(key: ApiKeyRow) -> dict[str, Any]:
    """A key's settings as audit entries record them: never its text or hash."""
    return {
        "name": key.name,
        "tenant_id": None if key.tenant_id is None else str(key.tenant_id),
        "prefix": key.prefix,
        "environment": key.environment,
        "scopes": key.scopes,
        "role_id": None if key.role_id is None else str(key.role_id),
        "rate_limit_max": key.rate_limit_max,
        "rate_limit_window": key.rate_limit_window,
        "expires_at": iso_or_none(key.expires_at),
        "revoked_at": iso_or_none(key.revoked_at),
        "rotated_from": None if key.rotated_from is None else str(key.rotated_from),
    }


def changed_fields(
    before: dict[str, Any], after: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only what differs, as the audit entry's before and after."""
    names = [k for k in after if before.get(k) != after[k]]
    return {k: before.get(k) for k in names}, {k: after[k] for k in names}


async def change_then_forget(
    db: Database,
    work: Callable[[asyncpg.Connection], Awaitable[T]],
    forget: Callable[[UUID], None],
    changed: UUID,
) -> T:
    """`work` in one transaction; after its commit the changed key or role is dropped
    from this process's key cache at once (other processes hear migration 0006's
    announcement)."""
    result = await db.transaction(work)
    forget(changed)
    return result


class KeyStoreChanges:
    """The base of the key and role changes: the repositories they use, and the key
    cache they drop a changed key or role from after the commit (change_then_forget)."""

    def __init__(self, deps: Deps, cache: KeyCache) -> None:
        self.deps = deps
        self.cache = cache
        self.keys = deps.repos.api_keys
        self.roles = deps.repos.roles
        self.tenants = deps.repos.tenants
