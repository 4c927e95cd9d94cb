"""The settings of tokens from an OpenID Connect provider (docs/identity.md).

Declared on Settings (service/settings/options.py) and read there with every other option;
this module checks them against each other and works out the derived ones (the issuer
without its trailing slash, JWT_ALGORITHMS, JWT_SCOPE_MAP).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.settings.reader import EnvironmentReader
from service.settings.table import option_of

if TYPE_CHECKING:
    from service.settings.options import Settings

ASYMMETRIC_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
)  # fmt: skip
PROVIDER_DEFAULT_ALGORITHMS = ("RS256", "ES256", "EdDSA")
_SCOPE_NAMES = ("read", "write", "admin")


def identity_settings(reader: EnvironmentReader, settings: Settings) -> dict[str, object]:
    jwks_url = settings.jwt_jwks_url
    issuer = settings.oidc_issuer
    if issuer is not None:
        issuer = issuer.rstrip("/")
    provider = jwks_url is not None or issuer is not None
    for name, url in (("JWT_JWKS_URL", jwks_url), ("OIDC_ISSUER", issuer)):
        if url is None:
            continue
        if not url.startswith(("https://", "http://")):
            reader.errors.append(f"{name} must be an http(s) URL")
        elif settings.is_production and not url.startswith("https://"):
            reader.errors.append(f"{name} must use https when SERVICE_ENV=production")
    declared = option_of(settings, "jwt_algorithms")
    default = PROVIDER_DEFAULT_ALGORITHMS if provider else declared.default
    raw = reader.text(declared.env, ",".join(default))
    algorithms = tuple(dict.fromkeys(a.strip() for a in raw.split(",") if a.strip()))
    # Never `none`, never an HMAC algorithm but HS256 with JWT_SECRET (a provider's
    # public key must never double as an HMAC secret).
    bad = [a for a in algorithms if a != "HS256" and a not in ASYMMETRIC_ALGORITHMS]
    if bad or not algorithms:
        reader.errors.append(
            f"JWT_ALGORITHMS must list HS256 and/or {', '.join(ASYMMETRIC_ALGORITHMS)}, got {raw!r}"
        )
        algorithms = default
    if not provider and any(a != "HS256" for a in algorithms):
        reader.errors.append(
            "JWT_ALGORITHMS names a public-key algorithm: set JWT_JWKS_URL or OIDC_ISSUER"
        )
    allow_any_audience = settings.jwt_allow_any_audience
    if provider and settings.is_production:
        if settings.jwt_audience is None:
            reader.errors.append("SERVICE_ENV=production with a JWKS requires JWT_AUDIENCE")
        if settings.jwt_issuer is None and issuer is None:
            reader.errors.append(
                "SERVICE_ENV=production with JWT_JWKS_URL requires JWT_ISSUER or OIDC_ISSUER"
            )
    elif provider and settings.jwt_audience is None and not allow_any_audience:
        reader.errors.append(
            "JWT_JWKS_URL or OIDC_ISSUER requires JWT_AUDIENCE (without it, the provider's "
            "tokens for any other application are accepted); set JWT_ALLOW_ANY_AUDIENCE=true "
            "to accept them knowingly"
        )
    scope_map: list[tuple[str, str]] = []
    for part in reader.text(option_of(settings, "jwt_scope_map").env, "").split(","):
        if not part.strip():
            continue
        name, sep, scope = part.strip().rpartition("=")
        if not sep or not name.strip() or scope.strip() not in _SCOPE_NAMES:
            reader.errors.append(
                f"JWT_SCOPE_MAP entries are provider-scope=read|write|admin, got {part.strip()!r}"
            )
            continue
        scope_map.append((name.strip(), scope.strip()))
    return {"oidc_issuer": issuer, "jwt_algorithms": algorithms, "jwt_scope_map": tuple(scope_map)}
