"""Bearer tokens (docs/api.md, Authentication and scopes; docs/identity.md).

Two kinds, both optional: HS256 signed with JWT_SECRET (this deployment's own), and
tokens of an OpenID Connect provider signed with a key of its JWKS (RS*, PS*, ES*,
EdDSA). JWT_ALGORITHMS is the allow-list; the token's `alg` picks the kind, and each
kind verifies only with its own keys: an HS256 token is never checked against a
provider's public key (algorithm confusion), `none` is never accepted.
"""

from __future__ import annotations

from typing import Any, cast

import jwt

from service.auth.claims import invalid_token, principal_from_claims
from service.auth.jwks import REFETCH_INTERVAL_SECONDS, JwksCache, KeysUnavailable
from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.settings.options import Settings

LEEWAY_SECONDS = 30
MAX_TOKEN_LENGTH = 8192
MAX_KID_LENGTH = 256
TIME_CLAIMS = ("exp", "nbf", "iat")

__all__ = ["LEEWAY_SECONDS", "MAX_TOKEN_LENGTH", "TokenVerifier", "invalid_token"]


def provider_unavailable() -> ServiceError:
    return ServiceError(
        "SERVICE_UNAVAILABLE",
        "the identity provider's signing keys are unavailable; retry shortly",
        headers={"Retry-After": str(int(REFETCH_INTERVAL_SECONDS))},
    )


class TokenVerifier:
    def __init__(self, settings: Settings, jwks: JwksCache | None) -> None:
        self.settings = settings
        self.jwks = jwks

    async def principal(self, token: str) -> Principal:
        if len(token) > MAX_TOKEN_LENGTH:
            raise invalid_token("token too long")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise invalid_token() from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.settings.jwt_algorithms:
            raise invalid_token("the token's algorithm is not accepted here")
        provider = alg != "HS256"
        key: jwt.PyJWK | str = self.settings.jwt_secret
        if provider:
            key = await self._provider_key(header.get("kid"), alg)
        claims = self._decode(token, key, alg, provider=provider)
        return principal_from_claims(claims, self.settings, provider=provider)

    async def _provider_key(self, kid: Any, alg: str) -> jwt.PyJWK:
        if self.jwks is None:
            raise invalid_token("the token's algorithm is not accepted here")
        if not isinstance(kid, str) or not kid or len(kid) > MAX_KID_LENGTH:
            raise invalid_token("the token names no signing key (kid)")
        try:
            key = await self.jwks.key_for(kid, alg)
        except KeysUnavailable as exc:
            raise provider_unavailable() from exc
        if key is None:
            raise invalid_token("the token's signing key is unknown")
        return key

    def _decode(
        self, token: str, key: jwt.PyJWK | str, alg: str, *, provider: bool
    ) -> dict[str, Any]:
        settings = self.settings
        issuer = settings.jwt_issuer
        required = ["sub"]
        if provider:
            issuer = issuer or settings.oidc_issuer
            required += ["exp", "iss"]
        elif settings.is_production:
            required.append("exp")
        verify_aud = settings.jwt_audience is not None
        options: dict[str, Any] = {"require": required, "verify_aud": verify_aud}
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                leeway=LEEWAY_SECONDS,
                audience=settings.jwt_audience,
                options=cast(Any, options),
            )
        except (jwt.PyJWTError, ValueError, TypeError, OverflowError) as exc:
            raise invalid_token() from exc
        if not isinstance(claims, dict):
            raise invalid_token()
        for name in TIME_CLAIMS:
            # RFC 7519 NumericDate: a number (PyJWT would take "9999999999" as one).
            value = claims.get(name)
            if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise invalid_token(f"the {name} claim must be a number")
        if issuer is not None and not _same_issuer(claims.get("iss"), issuer):
            raise invalid_token("the token's issuer is not accepted here")
        return claims


def _same_issuer(claimed: Any, expected: str) -> bool:
    # Auth0 writes its issuer with a trailing slash, most providers without: the same one.
    return isinstance(claimed, str) and claimed.rstrip("/") == expected.rstrip("/")
