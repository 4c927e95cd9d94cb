"""From a verified token's claims to a Principal: subject and issuer, scopes, tenant.

A token signed with JWT_SECRET is this deployment's own and follows the interface's
contract: its scopes are the `scopes` claim (read, write, admin only), and without that
claim it reads; any other claim (`scope`, `scp`, JWT_SCOPES_CLAIM) grants it nothing.
A provider's token takes its scopes from JWT_SCOPES_CLAIM when set, else from the first
of `scopes` (array), `scope` (space-separated, OAuth 2.0) and `scp` (Entra ID, Okta;
string or array); it carries scopes of other APIs too (openid, profile, ...): those are
ignored; with JWT_SCOPE_MAP only mapped names grant anything; without a scope claim it
grants nothing. With JWT_REQUIRE_TENANT_CLAIM (on in production) a provider's token
without a tenant (the claim missing or null) is refused rather than reaching every tenant.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from service.auth.principal import SCOPES, Principal
from service.base.errors import ServiceError
from service.settings.options import Settings

DEFAULT_SCOPE_CLAIMS = ("scopes", "scope", "scp")
# The one scope claim of a token signed with JWT_SECRET.
OWN_SCOPES_CLAIM = "scopes"
MAX_CLAIM_TEXT = 255


def invalid_token(reason: str = "invalid or expired token") -> ServiceError:
    return ServiceError(
        "INVALID_CREDENTIALS", reason, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'}
    )


def claim(claims: dict[str, Any], name: str) -> Any:
    """A claim by name; a dotted name that is not a claim itself walks nested objects
    (`realm_access.roles`), so namespaced claims with dots (Auth0) still work."""
    if name in claims or "." not in name:
        return claims.get(name)
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_CLAIM_TEXT:
        raise invalid_token(f"the {name} claim must be a non-empty string (at most 255)")
    try:
        value.encode("utf-8")  # a lone surrogate cannot be stored, logged or hashed
    except UnicodeEncodeError as exc:
        raise invalid_token(f"the {name} claim is not valid text") from exc
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise invalid_token(f"the {name} claim holds control characters")
    return value


def _names(value: Any, name: str) -> list[str]:
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return value
    raise invalid_token(f"the {name} claim must be an array or a space-separated string")


def scopes_of(claims: dict[str, Any], settings: Settings, *, provider: bool) -> frozenset[str]:
    if not provider:
        value = claims.get(OWN_SCOPES_CLAIM)
        if value is None:
            return frozenset({"read"})
        items = _names(value, OWN_SCOPES_CLAIM)
        if any(s not in SCOPES for s in items):
            raise invalid_token(f"the {OWN_SCOPES_CLAIM} claim names unknown scopes")
        return frozenset(items)
    names = (settings.jwt_scopes_claim,) if settings.jwt_scopes_claim else DEFAULT_SCOPE_CLAIMS
    for name in names:
        value = claim(claims, name)
        if value is None:
            continue
        items = _names(value, name)
        mapping = dict(settings.jwt_scope_map)
        if mapping:
            return frozenset(mapping[s] for s in items if s in mapping)
        return frozenset(s for s in items if s in SCOPES)
    return frozenset()


def tenant_of(claims: dict[str, Any], settings: Settings) -> uuid.UUID | None:
    value = claim(claims, settings.jwt_tenant_claim)
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError
        return uuid.UUID(value)
    except ValueError as exc:
        raise invalid_token(f"the {settings.jwt_tenant_claim} claim must be a UUID") from exc


def principal_from_claims(
    claims: dict[str, Any], settings: Settings, *, provider: bool
) -> Principal:
    sub = _text(claims.get("sub"), "sub")
    issuer = claims.get("iss")
    # The audit log's actor: `issuer#subject` (an OpenID issuer has no fragment, so the
    # first '#' splits it), or the bare subject of a token without an issuer.
    actor_id = sub if issuer is None else f"{_text(issuer, 'iss')}#{sub}"
    exp = claims.get("exp")
    expires_at: datetime | None = None
    if isinstance(exp, int | float):
        try:
            expires_at = datetime.fromtimestamp(exp, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise invalid_token("the exp claim is out of range") from exc
    tenant_id = tenant_of(claims, settings)
    if provider and tenant_id is None and settings.jwt_require_tenant_claim:
        raise invalid_token(f"the token names no tenant (the {settings.jwt_tenant_claim} claim)")
    return Principal(
        actor_id=actor_id,
        actor_type="jwt",
        scopes=scopes_of(claims, settings, provider=provider),
        tenant_id=tenant_id,
        expires_at=expires_at,
    )
