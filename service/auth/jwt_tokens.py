"""HS256 bearer tokens (DESIGN.md section 5). Any other algorithm is refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

import jwt

from service.auth.principal import SCOPES, Principal
from service.config import Settings
from service.errors import ServiceError

LEEWAY_SECONDS = 30
MAX_TOKEN_LENGTH = 8192


def invalid_token(reason: str = "invalid or expired token") -> ServiceError:
    return ServiceError(
        "INVALID_CREDENTIALS", reason, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'}
    )


def _scopes(claim: Any) -> frozenset[str]:
    if claim is None:
        return frozenset({"read"})
    if isinstance(claim, str):
        items = claim.split()
    elif isinstance(claim, list) and all(isinstance(s, str) for s in claim):
        items = claim
    else:
        raise invalid_token("the scopes claim must be an array or a space-separated string")
    unknown = [s for s in items if s not in SCOPES]
    if unknown:
        raise invalid_token("the scopes claim names unknown scopes")
    return frozenset(items)


def decode_token(token: str, settings: Settings) -> Principal:
    if len(token) > MAX_TOKEN_LENGTH:
        raise invalid_token("token too long")
    required = ["sub"] + (["exp"] if settings.is_production else [])
    options: dict[str, Any] = {"require": required, "verify_aud": settings.jwt_audience is not None}
    try:
        header = jwt.get_unverified_header(token)
        if header.get("alg") != "HS256":
            raise invalid_token("only HS256 tokens are accepted")
        claims = jwt.decode(
            token,
            settings.jwt_secret,
            algorithms=["HS256"],
            leeway=LEEWAY_SECONDS,
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
            options=cast(Any, options),
        )
    except jwt.PyJWTError as exc:
        raise invalid_token() from exc
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub or len(sub) > 255:
        raise invalid_token("the sub claim must be a non-empty string")
    tenant_id = claims.get("tenant_id")
    tenant: uuid.UUID | None = None
    if tenant_id is not None:
        try:
            tenant = uuid.UUID(str(tenant_id))
        except ValueError as exc:
            raise invalid_token("the tenant_id claim must be a UUID") from exc
    exp = claims.get("exp")
    return Principal(
        actor_id=sub,
        actor_type="jwt",
        scopes=_scopes(claims.get("scopes")),
        tenant_id=tenant,
        expires_at=datetime.fromtimestamp(exp, UTC) if isinstance(exp, int | float) else None,
    )
