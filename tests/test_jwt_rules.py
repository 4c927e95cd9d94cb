"""Bearer token rules: a JWT_SECRET token's scopes are its `scopes` claim only (a `scope`
string grants nothing), time claims must be numbers, a provider's token must name a
tenant when JWT_REQUIRE_TENANT_CLAIM is on (the production default), a provider needs
an audience unless JWT_ALLOW_ANY_AUDIENCE says otherwise, and a provider's empty key
set withdraws every key rather than counting as a failed fetch."""

from __future__ import annotations

import base64
import os
import secrets
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp.test_utils import TestClient

from service.http.appkeys import AUTHENTICATOR
from service.settings.options import ConfigError, Settings
from tests.conftest import JWT_SECRET, base_env
from tests.support.api import unique_slug
from tests.support.keys import bearer, make_token
from tests.support.oidc import AUDIENCE, FakeClock, Provider

ALGORITHMS = "HS256,RS256"


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    p = Provider()
    p.add("RSA", "rsa-1")
    await p.start()
    yield p
    await p.close()


@pytest.fixture
def settings_env(provider: Provider) -> dict[str, str]:
    return {
        "OIDC_ISSUER": provider.issuer,
        "JWT_AUDIENCE": AUDIENCE,
        "JWT_ALGORITHMS": ALGORITHMS,
        "JWT_REQUIRE_TENANT_CLAIM": "true",
    }


@pytest.fixture
def clock(client: TestClient) -> FakeClock:
    fake = FakeClock()
    jwks = client.app[AUTHENTICATOR].jwks
    assert jwks is not None
    jwks.clock = fake
    return fake


def own(**claims: Any) -> str:
    """A token signed with JWT_SECRET (JWT_AUDIENCE applies to every token)."""
    return make_token(JWT_SECRET, aud=AUDIENCE, **claims)


async def call(client: TestClient, token: str, method: str = "GET") -> tuple[int, Any]:
    if method == "POST":
        resp = await client.post(
            "/api/v1/tenants", json={"name": "T", "slug": unique_slug()}, headers=bearer(token)
        )
    else:
        resp = await client.get("/api/v1/tenants?limit=1", headers=bearer(token))
    body = await resp.json()
    return resp.status, (body["error"]["code"] if resp.status >= 400 else None)


async def test_an_own_token_takes_scopes_only_from_the_scopes_claim(client: TestClient) -> None:
    only_scope = own(scope="admin")
    assert await call(client, only_scope) == (200, None)
    assert await call(client, only_scope, "POST") == (403, "INSUFFICIENT_SCOPE")
    only_scp = own(scp=["read", "write"])
    assert await call(client, only_scp, "POST") == (403, "INSUFFICIENT_SCOPE")
    granted = own(scopes=["read", "write"], scope="openid")
    assert await call(client, granted, "POST") == (201, None)


@pytest.mark.parametrize(
    "claims",
    [{"exp": "9999999999"}, {"nbf": "0"}, {"iat": "1700000000"}, {"exp": True}],
    ids=["exp", "nbf", "iat", "bool-exp"],
)
async def test_time_claims_must_be_numbers(client: TestClient, claims: dict[str, Any]) -> None:
    token = own(scopes=["read"], **claims)
    assert await call(client, token) == (401, "INVALID_CREDENTIALS")


async def test_a_provider_token_must_name_a_tenant(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    assert await call(client, provider.token("rsa-1", scope="read")) == (401, "INVALID_CREDENTIALS")
    with_null = provider.claims(scope="read") | {"tenant_id": None}
    token = jwt.encode(
        with_null, provider.keys["rsa-1"].private, algorithm="RS256", headers={"kid": "rsa-1"}
    )
    assert await call(client, token) == (401, "INVALID_CREDENTIALS")
    named = provider.token("rsa-1", scope="read", tenant_id=str(uuid.uuid4()))
    assert await call(client, named) == (200, None)
    # the deployment's own tokens are not the provider's: a global one still works
    assert await call(client, own()) == (200, None)


async def test_an_empty_key_set_withdraws_every_key(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    token = provider.token("rsa-1", scope="read", tenant_id=str(uuid.uuid4()))
    assert await call(client, token) == (200, None)
    provider.published.clear()
    clock.advance(301)  # past the cache's TTL: refetched in the background
    await call(client, token)
    jwks = client.app[AUTHENTICATOR].jwks
    assert jwks is not None
    await jwks.settled()
    assert provider.jwks_hits == 2
    # an answer, not a failure: refused as unknown (401), not "unavailable" (503)
    assert await call(client, token) == (401, "INVALID_CREDENTIALS")


def problem(tmp_path: Path, **env: str) -> str:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(base_env("postgresql://x/y", tmp_path, **env))
    return str(caught.value)


def test_a_provider_needs_an_audience(tmp_path: Path) -> None:
    for provider in ({"OIDC_ISSUER": "https://idp.example"},
                     {"JWT_JWKS_URL": "https://idp.example/jwks"}):  # fmt: skip
        assert (
            "JWT_JWKS_URL or OIDC_ISSUER requires JWT_AUDIENCE (without it, the provider's "
            "tokens for any other application are accepted); set JWT_ALLOW_ANY_AUDIENCE=true "
            "to accept them knowingly"
        ) in problem(tmp_path, **provider)
        settings = Settings.from_env(
            base_env("postgresql://x/y", tmp_path, JWT_ALLOW_ANY_AUDIENCE="true", **provider)
        )
        assert (settings.jwt_audience, settings.jwt_allow_any_audience) == (None, True)
    # no provider, no audience needed
    assert Settings.from_env(base_env("postgresql://x/y", tmp_path)).jwt_audience is None


def test_the_tenant_claim_is_required_in_production(tmp_path: Path) -> None:
    def settings(**env: str) -> Settings:
        return Settings.from_env(base_env("postgresql://x/y", tmp_path, **env))

    production = {
        "SERVICE_ENV": "production",
        "OIDC_ISSUER": "https://idp.example",
        "JWT_AUDIENCE": "api",
        "SERVICE_API_KEY_HMAC_SECRET": secrets.token_hex(32),
        "SERVICE_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
        "JWT_SECRET": secrets.token_urlsafe(48),
    }
    assert settings(**production).jwt_require_tenant_claim is True
    assert (
        settings(**production, JWT_REQUIRE_TENANT_CLAIM="false").jwt_require_tenant_claim is False
    )
    assert settings().jwt_require_tenant_claim is False
    assert settings(JWT_REQUIRE_TENANT_CLAIM="true").jwt_require_tenant_claim is True
