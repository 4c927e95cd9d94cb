"""Tokens from an OpenID Connect provider (issue 19), against a loopback provider.

The provider (tests/support/oidc.py) serves a discovery document and a JWKS of keys
generated here; the JWKS cache runs on a fake clock, so its 30 s refetch bound and its
TTL and stale limits are tested without waiting.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from structlog.testing import capture_logs

from service.app import create_app
from service.auth.jwks import JwksCache, KeysUnavailable
from service.http.appkeys import AUTHENTICATOR, METRICS
from service.settings.options import ConfigError, Settings
from tests.conftest import JWT_SECRET, base_env
from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.keys import bearer, key_headers, make_token
from tests.support.oidc import AUDIENCE, FakeClock, Provider, b64, hs256_with

ALGORITHMS = "HS256,RS256,ES256,ES384,EdDSA,PS256"


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    p = Provider()
    p.add("RSA", "rsa-1")
    p.add("EC", "ec-1")
    p.add("Ed25519", "ed-1")
    await p.start()
    yield p
    await p.close()


@pytest.fixture
def settings_env(provider: Provider) -> dict[str, str]:
    return {"OIDC_ISSUER": provider.issuer, "JWT_AUDIENCE": AUDIENCE, "JWT_ALGORITHMS": ALGORITHMS}


@pytest.fixture
def clock(client: TestClient) -> FakeClock:
    fake = FakeClock()
    jwks = client.app[AUTHENTICATOR].jwks
    assert jwks is not None
    jwks.clock = fake
    return fake


async def answer(client: TestClient, token: str, method: str = "GET", **kw: Any) -> Any:
    path = kw.pop("path", "/api/v1/tenants?limit=1")
    resp = await client.request(method, path, headers=bearer(token), **kw)
    body = await resp.json()
    return resp.status, (body["error"]["code"] if resp.status >= 400 else body)


async def status_of(client: TestClient, token: str) -> tuple[int, str | None]:
    status, body = await answer(client, token)
    return status, body if isinstance(body, str) else None


@pytest.mark.parametrize(("kid", "alg"), [("rsa-1", "RS256"), ("rsa-1", "PS256"),
                                          ("ec-1", "ES256"), ("ed-1", "EdDSA")])  # fmt: skip
async def test_each_algorithm_is_accepted(
    client: TestClient, provider: Provider, clock: FakeClock, kid: str, alg: str
) -> None:
    token = provider.token(kid, alg=alg, scope="openid read write")
    assert await status_of(client, token) == (200, None)
    status, created = await answer(
        client, token, "POST", path="/api/v1/tenants", json={"name": alg, "slug": unique_slug()}
    )
    assert status == 201
    # The audit log names the token's issuer and subject.
    admin = await key_headers(client.app)
    actor = f"{provider.issuer}#alice"
    audit = await get_json(client, "/api/v1/audit-logs", admin, params={"actor_id": actor})
    assert [(e["actor_id"], e["actor_type"], e["resource_id"]) for e in audit] == [
        (actor, "jwt", created["id"])
    ]
    assert (provider.discovery_hits, provider.jwks_hits) == (1, 1)


async def test_hs256_keeps_working_beside_the_provider(client: TestClient, clock: Any) -> None:
    token = make_token(JWT_SECRET, aud=AUDIENCE, scopes=["read"])
    assert await status_of(client, token) == (200, None)


def jwks_of(client: TestClient) -> JwksCache:
    jwks = client.app[AUTHENTICATOR].jwks
    assert jwks is not None
    return jwks


async def test_key_rotation_to_a_new_kid_is_picked_up(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    old = provider.token("rsa-1", scope="read")
    assert await status_of(client, old) == (200, None)
    provider.add("RSA", "rsa-2")
    rotated = provider.token("rsa-2", scope="read")
    # Within 30 s of the last fetch an unknown kid does not refetch.
    clock.advance(10)
    assert await status_of(client, rotated) == (401, "INVALID_CREDENTIALS")
    assert provider.jwks_hits == 1
    clock.advance(21)
    assert await status_of(client, rotated) == (200, None)
    assert provider.jwks_hits == 2
    # The provider retires the old key: after the cache's TTL the set is refetched in
    # the background (the request that noticed is served from the set in hand) ...
    provider.published.remove("rsa-1")
    clock.advance(300)
    assert await status_of(client, old) == (200, None)
    await jwks_of(client).settled()
    assert provider.jwks_hits == 3
    # ... and the old key's tokens stop working.
    assert await status_of(client, old) == (401, "INVALID_CREDENTIALS")
    assert await status_of(client, rotated) == (200, None)


def fetches(client: TestClient, outcome: str) -> float:
    text = client.app[METRICS].exposition().decode()
    prefix = f'tenant_service_jwks_fetches_total{{outcome="{outcome}"}} '
    lines = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(lines[0][len(prefix) :]) if lines else 0.0


async def test_provider_down_the_cached_set_serves_for_a_bounded_time(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    token = provider.token("ec-1", scope="read")
    assert await status_of(client, token) == (200, None)
    provider.down = True
    clock.advance(301)  # past the TTL: a refresh is due and fails
    with capture_logs() as logs:
        assert await status_of(client, token) == (200, None)
        await jwks_of(client).settled()
    assert [line for line in logs if line["event"] != "request"] == [
        {
            "event": "jwks fetch failed",
            "reason": "the provider answered HTTP 503",
            "serving_cached": True,
            "log_level": "warning",
        }
    ]
    assert (fetches(client, "success"), fetches(client, "failure")) == (1.0, 1.0)
    # Still served from the cached set within JWT_JWKS_MAX_STALE (1 hour) ...
    clock.advance(3000)
    assert await status_of(client, token) == (200, None)
    await jwks_of(client).settled()
    assert fetches(client, "failure") == 2.0
    # ... and no longer after it: the provider's keys are unavailable (503, not 401).
    clock.advance(300)
    resp = await client.get("/api/v1/tenants", headers=bearer(token))
    assert (resp.status, (await resp.json())["error"]["code"]) == (503, "SERVICE_UNAVAILABLE")
    assert resp.headers["Retry-After"] == "30"
    # The provider is back: the next fetch (30 s later at the earliest) restores service.
    provider.down = False
    clock.advance(31)
    assert await status_of(client, token) == (200, None)
    assert (fetches(client, "success"), fetches(client, "failure")) == (2.0, 3.0)


async def test_unknown_kid_flood_refetches_at_most_once_per_30_seconds(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    assert await status_of(client, provider.token("rsa-1", scope="read")) == (200, None)
    assert provider.jwks_hits == 1
    for _ in range(2):
        forged = []
        for _ in range(25):
            kid = secrets.token_hex(8)
            provider.add("EC", kid, publish=False)
            forged.append(provider.token(kid, scope="read admin"))
        answers = await asyncio.gather(*(status_of(client, t) for t in forged))
        assert set(answers) == {(401, "INVALID_CREDENTIALS")}
        clock.advance(31)
    # One fetch for the first request, one for the second burst (30 s later); none for
    # the first burst, which came within 30 s of the first fetch.
    assert provider.jwks_hits == 2


class FromNow(int):
    """Seconds from the test's own time, not the collection's: a run may reach the test
    more than ten minutes after collecting it."""


@pytest.mark.parametrize(
    "claims",
    [
        {"iss": "https://evil.example"},
        {"iss": None},
        {"aud": "another-api"},
        {"aud": None},
        {"exp": FromNow(-120)},
        {"exp": None},
        {"nbf": FromNow(600)},
        {"exp": 10**20},  # validly signed, absurd expiry: 401, never 500
        {"sub": "\ud800"},  # a lone surrogate
        {"sub": None},
        {"tenant_id": "not-a-uuid"},
        {"scope": 5},
    ],
    ids=lambda c: json.dumps(c)[:40],
)
async def test_bad_claims_are_401(
    client: TestClient, provider: Provider, clock: FakeClock, claims: dict[str, Any]
) -> None:
    now = int(time.time())
    claims = {k: now + v if isinstance(v, FromNow) else v for k, v in claims.items()}
    token = provider.token("rsa-1", **{"scope": "read", **claims})
    assert await status_of(client, token) == (401, "INVALID_CREDENTIALS")


async def test_leeway_allows_small_clock_skew(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    token = provider.token("rsa-1", scope="read", exp=int(time.time()) - 10)
    assert await status_of(client, token) == (200, None)


async def test_an_issuer_with_a_trailing_slash_is_the_same_issuer(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    token = provider.token("rsa-1", scope="read", iss=provider.issuer + "/")  # as Auth0 writes it
    assert await status_of(client, token) == (200, None)
    token = provider.token("rsa-1", scope="read", iss=provider.issuer + "/other")
    assert await status_of(client, token) == (401, "INVALID_CREDENTIALS")


async def test_algorithm_confusion_none_and_mismatched_keys_are_401(
    client: TestClient, provider: Provider, clock: FakeClock
) -> None:
    assert await status_of(client, provider.token("rsa-1", scope="read")) == (200, None)
    claims = provider.claims(scope="read write admin")
    rsa = provider.keys["rsa-1"]
    # HS256 "signed" with the provider's public key, as PEM and as the JWK's modulus.
    for secret in (rsa.public_pem(), json.dumps(rsa.jwk()).encode()):
        confused = hs256_with(secret, {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, claims)
        assert await status_of(client, confused) == (401, "INVALID_CREDENTIALS")
    unsigned = f"{b64(json.dumps({'alg': 'none', 'kid': 'rsa-1'}).encode())}."
    unsigned += f"{b64(json.dumps(claims).encode())}."
    assert await status_of(client, unsigned) == (401, "INVALID_CREDENTIALS")
    # A key never verifies a token of another algorithm, nor one of another key's kid.
    for kid, alg, label in (("ec-1", "ES256", "ES384"), ("ed-1", "EdDSA", "rsa-1")):
        token = provider.token(kid, alg=alg, scope="read")
        header = {"alg": label, "typ": "JWT", "kid": kid}
        if label == "rsa-1":
            header = {"alg": alg, "typ": "JWT", "kid": label}
        relabelled = b64(json.dumps(header).encode()) + token[token.index(".") :]
        assert await status_of(client, relabelled) == (401, "INVALID_CREDENTIALS")
    # An algorithm outside JWT_ALGORITHMS (RS512 is not listed here).
    assert await status_of(client, provider.token("rsa-1", alg="RS512")) == (
        401,
        "INVALID_CREDENTIALS",
    )
    assert provider.jwks_hits == 1


@pytest.mark.parametrize(
    "claims",
    [
        {"scopes": ["read", "write"]},
        {"scope": "openid profile read write"},
        {"scp": "read write"},
        {"scp": ["read", "write"]},
    ],
    ids=lambda c: json.dumps(c),
)
async def test_each_scope_claim_form(
    client: TestClient, provider: Provider, clock: FakeClock, claims: dict[str, Any]
) -> None:
    token = provider.token("ed-1", **claims)
    assert await status_of(client, token) == (200, None)
    status, _ = await answer(
        client, token, "POST", path="/api/v1/tenants", json={"name": "s", "slug": unique_slug()}
    )
    assert status == 201
    status, code = await answer(client, token, path="/api/v1/api-keys")
    assert (status, code) == (403, "INSUFFICIENT_SCOPE")


@pytest.mark.parametrize("claims", [{}, {"scope": "openid profile email"}, {"scp": []}])
async def test_a_provider_token_without_our_scopes_grants_nothing(
    client: TestClient, provider: Provider, clock: FakeClock, claims: dict[str, Any]
) -> None:
    token = provider.token("ed-1", **claims)
    assert await status_of(client, token) == (403, "INSUFFICIENT_SCOPE")


async def client_with(aiohttp_client: Any, db_url: str, tmp_path: Path, **env: str) -> TestClient:
    settings = Settings.from_env(base_env(db_url, tmp_path, **env))
    result: TestClient = await aiohttp_client(create_app(settings))
    return result


SCOPE_MAP = "tenants:read=read,tenants:write=write,tenants:admin=admin"


@pytest.mark.parametrize(
    ("env", "reader", "writer", "stranger"),
    [
        (  # the standard claims through a map (Auth0 API permissions as scopes)
            {"JWT_SCOPE_MAP": SCOPE_MAP},
            {"scope": "openid tenants:read"},
            {"scope": "tenants:read tenants:write"},
            {"scope": "read write admin"},  # unmapped names grant nothing once a map is set
        ),
        (  # a claim of its own, here Keycloak's realm roles
            {"JWT_SCOPES_CLAIM": "realm_access.roles", "JWT_SCOPE_MAP": SCOPE_MAP},
            {"realm_access": {"roles": ["offline_access", "tenants:read"]}},
            {"realm_access": {"roles": ["tenants:read", "tenants:write"]}},
            {"scope": "read write admin"},  # only the named claim counts
        ),
        (  # Auth0's RBAC permissions, named as they are
            {"JWT_SCOPES_CLAIM": "permissions"},
            {"permissions": ["read"]},
            {"permissions": ["read", "write"]},
            {"scp": ["read", "write", "admin"]},
        ),
    ],
)
async def test_scope_claim_setting_and_scope_map(
    aiohttp_client: Any,
    db_url: str,
    tmp_path: Path,
    provider: Provider,
    settings_env: dict[str, str],
    env: dict[str, str],
    reader: dict[str, Any],
    writer: dict[str, Any],
    stranger: dict[str, Any],
) -> None:
    client = await client_with(aiohttp_client, db_url, tmp_path, **settings_env, **env)
    new = {"json": {"name": "m", "slug": unique_slug()}, "path": "/api/v1/tenants"}
    read_token = provider.token("rsa-1", **reader)
    assert await status_of(client, read_token) == (200, None)
    assert (await answer(client, read_token, "POST", **new))[1] == "INSUFFICIENT_SCOPE"
    write_token = provider.token("rsa-1", **writer)
    assert (await answer(client, write_token, "POST", **new))[0] == 201
    assert await status_of(client, provider.token("rsa-1", **stranger)) == (
        403,
        "INSUFFICIENT_SCOPE",
    )


async def same_answer(
    client: TestClient, method: str, path: str, body: Any, *credentials: dict[str, str]
) -> tuple[int, Any]:
    """The one answer every credential gets (error bodies without their request ids)."""
    answers = []
    for headers in credentials:
        resp = await client.request(method, path, json=body, headers=headers)
        data = await resp.json() if resp.status != 204 else None
        if isinstance(data, dict) and "error" in data:
            data["error"].pop("request_id")
        answers.append((resp.status, data))
    assert all(a == answers[0] for a in answers), (method, path, answers)
    return answers[0]


@pytest.mark.parametrize("claim", ["tenant_id", "https://example.com/tenant"])
async def test_tenant_claim_restricts_exactly_as_a_tenant_scoped_key(
    aiohttp_client: Any,
    db_url: str,
    tmp_path: Path,
    provider: Provider,
    settings_env: dict[str, str],
    claim: str,
) -> None:
    client = await client_with(
        aiohttp_client, db_url, tmp_path, **settings_env, JWT_TENANT_CLAIM=claim
    )
    admin = await key_headers(client.app)
    root = await create_tenant(client, admin, name="root")
    mine = await create_tenant(client, admin, name="mine", parent_id=root["id"])
    below = await create_tenant(client, admin, name="below", parent_id=mine["id"])
    sibling = await create_tenant(client, admin, name="sibling", parent_id=root["id"])
    key = await key_headers(client.app, ["read", "write"], tenant_id=mine["id"])
    token = bearer(provider.token("rsa-1", **{"scope": "read write", claim: mine["id"]}))

    status, listed = await same_answer(client, "GET", "/api/v1/tenants?limit=100", None, key, token)
    assert [t["name"] for t in listed["data"]] == ["mine", "below"]
    for path in (f"/{below['id']}/ancestors", f"/{mine['id']}/descendants", f"/{below['id']}"):
        assert (await same_answer(client, "GET", f"/api/v1/tenants{path}", None, key, token))[
            0
        ] == 200
    for tenant_id in (root["id"], sibling["id"]):
        for method, path, body in (
            ("GET", "", None),
            ("PATCH", "", {"name": "stolen"}),
            ("DELETE", "", None),
            ("GET", "/ancestors", None),
            ("GET", "/descendants", None),
            ("GET", "/children", None),
            ("POST", "/move", {"new_parent_id": mine["id"]}),
            ("POST", "/restore", None),
        ):
            status, body_ = await same_answer(
                client, method, f"/api/v1/tenants/{tenant_id}{path}", body, key, token
            )
            assert (status, body_["error"]["code"]) == (404, "TENANT_NOT_FOUND")
        status, body_ = await same_answer(
            client, "GET", f"/api/v1/tenants?parent_id={tenant_id}", None, key, token
        )
        assert status == 404
    status, body_ = await same_answer(
        client, "GET", f"/api/v1/tenants?slug={root['slug']}", None, key, token
    )
    assert (status, body_["data"]) == (200, [])
    status, body_ = await same_answer(
        client, "POST", f"/api/v1/tenants/{below['id']}/move", {"new_parent_id": None}, key, token
    )
    assert (status, body_["error"]["code"]) == (403, "TENANT_ACCESS_DENIED")
    new_root = {"name": "r", "slug": unique_slug()}
    status, body_ = await same_answer(client, "POST", "/api/v1/tenants", new_root, key, token)
    assert (status, body_["error"]["code"]) == (403, "TENANT_ACCESS_DENIED")


async def test_jwks_url_without_discovery(
    aiohttp_client: Any, db_url: str, tmp_path: Path, provider: Provider
) -> None:
    client = await client_with(
        aiohttp_client, db_url, tmp_path, JWT_JWKS_URL=provider.jwks_url, JWT_AUDIENCE=AUDIENCE
    )
    assert await status_of(client, provider.token("ed-1", scope="read")) == (200, None)
    assert await status_of(client, provider.token("rsa-1", scope="read")) == (200, None)
    # Without JWT_ISSUER any issuer is accepted, but the actor still names it.
    assert await status_of(client, provider.token("ed-1", scope="read", iss="https://x")) == (
        200,
        None,
    )
    # The default allow-list (RS256, ES256, EdDSA) leaves HS256 out.
    hs256 = make_token(JWT_SECRET, aud=AUDIENCE, scopes=["read"])
    assert await status_of(client, hs256) == (401, "INVALID_CREDENTIALS")
    assert (provider.discovery_hits, provider.jwks_hits) == (0, 1)


def settings_problem(tmp_path: Path, **env: str) -> str:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(base_env("postgresql://x/y", tmp_path, **env))
    return str(caught.value)


def test_provider_settings(tmp_path: Path) -> None:
    jwks = {"JWT_JWKS_URL": "https://idp.example/jwks", "JWT_AUDIENCE": "api"}
    settings = Settings.from_env(base_env("postgresql://x/y", tmp_path, **jwks))
    assert settings.jwt_algorithms == ("RS256", "ES256", "EdDSA")
    settings = Settings.from_env(base_env("postgresql://x/y", tmp_path))
    assert (settings.jwt_algorithms, settings.jwks_configured) == (("HS256",), False)
    settings = Settings.from_env(
        base_env(
            "postgresql://x/y",
            tmp_path,
            OIDC_ISSUER="https://idp.example/realms/acme/",
            JWT_AUDIENCE="api",
            JWT_SCOPE_MAP="tenants:read=read, api://x/Tenants.Write=write",
            JWT_JWKS_MAX_STALE="2 hours",
        )
    )
    assert settings.oidc_issuer == "https://idp.example/realms/acme"
    assert settings.jwt_scope_map == (("tenants:read", "read"), ("api://x/Tenants.Write", "write"))
    assert settings.jwks_max_stale_seconds == 7200
    for algorithms in ("none", "HS512", "RS256,HS384", ""):
        assert "JWT_ALGORITHMS must list" in settings_problem(
            tmp_path, JWT_ALGORITHMS=algorithms or ",", **jwks
        )
    assert "public-key algorithm" in settings_problem(tmp_path, JWT_ALGORITHMS="RS256")
    assert "JWT_SCOPE_MAP" in settings_problem(tmp_path, JWT_SCOPE_MAP="x=superuser")
    assert "http(s) URL" in settings_problem(tmp_path, OIDC_ISSUER="idp.example")


def test_production_needs_https_an_audience_and_an_issuer(tmp_path: Path) -> None:
    env = {"SERVICE_ENV": "production", "JWT_JWKS_URL": "http://idp.example/jwks"}
    problem = settings_problem(tmp_path, **env)
    assert "JWT_JWKS_URL must use https when SERVICE_ENV=production" in problem
    assert "requires JWT_AUDIENCE" in problem
    assert "requires JWT_ISSUER or OIDC_ISSUER" in problem
    # A provider-only deployment needs no JWT_SECRET.
    env = base_env(
        "postgresql://x/y",
        tmp_path,
        SERVICE_ENV="production",
        OIDC_ISSUER="https://idp.example",
        JWT_AUDIENCE="api",
        JWT_SECRET="",
        # Production also refuses the suite's patterned test secrets.
        SERVICE_API_KEY_HMAC_SECRET=secrets.token_hex(32),
        SERVICE_ENCRYPTION_KEY=base64.b64encode(os.urandom(32)).decode(),
    )
    assert Settings.from_env(env).jwt_algorithms == ("RS256", "ES256", "EdDSA")


async def test_production_never_fetches_keys_over_http(tmp_path: Path, provider: Provider) -> None:
    # Settings refuse an http:// URL in production; a discovery document pointing to one
    # is refused at fetch time (here the settings are built around the check).
    settings = replace(
        Settings.from_env(
            base_env("postgresql://x/y", tmp_path, OIDC_ISSUER=provider.issuer, JWT_AUDIENCE="a")
        ),
        environment="production",
    )
    jwks = JwksCache(settings)
    with capture_logs() as logs, pytest.raises(KeysUnavailable):
        await jwks.key_for("rsa-1", "RS256")
    await jwks.close()
    assert provider.discovery_hits + provider.jwks_hits == 0
    assert logs == [
        {
            "event": "jwks fetch failed",
            "reason": "the provider must be reached over https in production",
            "serving_cached": False,
            "log_level": "warning",
        }
    ]
