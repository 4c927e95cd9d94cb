"""Which scope a request needs: read for safe methods, write otherwise, admin on admin routes."""

from __future__ import annotations

import re

from service.auth.principal import Principal
from service.base.errors import ServiceError

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ADMIN_PREFIXES = (
    "/api/v1/api-keys",
    "/api/v1/audit-logs",
    "/api/v1/maintenance",
    "/api/v1/regions",
    "/api/v1/roles",
)
_ADMIN_TENANT_ROUTES = re.compile(
    r"^/api/v1/tenants/[^/]+/(purge|export|migrate-region|protect|unprotect)$"
)


def is_admin_path(path: str) -> bool:
    """Admin-only routes, /api/v1/roles included (docs/api.md, Authentication and scopes)."""
    return any(path == p or path.startswith(p + "/") for p in ADMIN_PREFIXES) or bool(
        _ADMIN_TENANT_ROUTES.match(path)
    )


def required_scopes(method: str, admin: bool) -> tuple[str, ...]:
    safe = method.upper() in SAFE_METHODS
    if admin:
        return ("read", "admin") if safe else ("admin",)
    return ("read",) if safe else ("write",)


def authorize(principal: Principal, method: str, admin: bool) -> None:
    missing = [s for s in required_scopes(method, admin) if not principal.has_scope(s)]
    if missing:
        raise ServiceError(
            "INSUFFICIENT_SCOPE",
            f"this request needs the {' and '.join(missing)} scope"
            + ("s" if len(missing) > 1 else ""),
        )
