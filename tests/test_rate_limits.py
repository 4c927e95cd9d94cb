"""Rate limits through HTTP: per-key buckets with X-RateLimit-* and IETF RateLimit headers
and 429, the global defaults, and the per-address buckets for bad credentials. Every test
runs with buckets in the process and again with buckets in Redis (a random key prefix per
test)."""

from __future__ import annotations

import asyncio
import math
import random
import secrets

import pytest
import redis.asyncio as redis_client

from service.http.appkeys import REPOSITORIES, SETTINGS
from service.ratelimit.buckets import Decision, Limit
from tests.conftest import JWT_SECRET
from tests.support.access import as_key, call, create_key, error_code
from tests.support.keys import bearer, make_token

REDIS_URL = "redis://127.0.0.1:6379"


@pytest.fixture(params=["local", "redis"])
def settings_env(request) -> dict[str, str]:
    env = {"RATE_LIMIT_MAX": "4", "RATE_LIMIT_WINDOW": "1 hour"}
    if request.param == "redis":
        env |= {"REDIS_URL": REDIS_URL, "REDIS_KEY_PREFIX": f"tsvc-test-{secrets.token_hex(6)}:"}
    return env


@pytest.fixture
async def redis_cleanup(client):
    """Remove this test's Redis keys afterwards."""
    yield
    settings = client.app[SETTINGS]
    if settings.redis_url is None:
        return
    conn = redis_client.Redis.from_url(settings.redis_url)
    try:
        keys = [k async for k in conn.scan_iter(match=settings.redis_key_prefix + "*")]
        if keys:
            await conn.delete(*keys)
    finally:
        await conn.aclose()


@pytest.fixture
def lookups(client, monkeypatch) -> list[bytes]:
    """Every key lookup authentication makes in the database."""
    repo = client.app[REPOSITORIES].api_keys
    seen: list[bytes] = []
    original = repo.get_api_key_for_auth

    async def counting(conn, key_hash):
        seen.append(key_hash)
        return await original(conn, key_hash)

    monkeypatch.setattr(repo, "get_api_key_for_auth", counting)
    return seen


def limit_headers(resp) -> tuple[str, str]:
    return resp.headers["X-RateLimit-Limit"], resp.headers["X-RateLimit-Remaining"]


@pytest.mark.usefixtures("redis_cleanup")
async def test_key_limit_429_then_passes_after_retry_after(client) -> None:
    # Keys above the global default (4 an hour here) come from an operator's JWT: a key
    # cannot hand out a higher limit than its own (docs/decisions.md).
    operator = bearer(make_token(JWT_SECRET, scopes=["read", "write", "admin"]))
    limited = as_key(await create_key(client, operator, rate_limit_max=3,
                                      rate_limit_window="6 seconds"))  # fmt: skip
    other = as_key(await create_key(client, operator, rate_limit_max=1000))
    for remaining in ("2", "1", "0"):
        resp = await client.get("/api/v1/tenants", headers=limited)
        assert resp.status == 200
        assert limit_headers(resp) == ("3", remaining)
        reset = resp.headers["X-RateLimit-Reset"]
        assert 1 <= int(reset) <= 2
        assert "Retry-After" not in resp.headers
        assert resp.headers["RateLimit-Policy"] == '"default";q=3;w=6'
        assert resp.headers["RateLimit"] == f'"default";r={remaining};t={reset}'
    resp = await client.get("/api/v1/tenants", headers=limited)
    body = await resp.json()
    assert (resp.status, error_code(body)) == (429, "RATE_LIMITED")
    assert limit_headers(resp) == ("3", "0")
    retry_after = int(resp.headers["Retry-After"])
    assert 1 <= retry_after <= 2  # one token comes back every 2 seconds
    # Reset is when Remaining next grows: when refused, when the next request passes.
    assert resp.headers["X-RateLimit-Reset"] == str(retry_after)
    assert resp.headers["RateLimit-Policy"] == '"default";q=3;w=6'
    assert resp.headers["RateLimit"] == f'"default";r=0;t={retry_after}'
    assert resp.headers["X-Request-ID"] == body["error"]["request_id"]

    # Another key is unaffected.
    resp = await client.get("/api/v1/tenants", headers=other)
    assert resp.status == 200
    assert limit_headers(resp) == ("1000", "999")

    await asyncio.sleep(retry_after)
    resp = await client.get("/api/v1/tenants", headers=limited)
    assert resp.status == 200
    assert limit_headers(resp) == ("3", "0")


@pytest.mark.usefixtures("redis_cleanup")
async def test_global_default_and_headers_on_every_answer(client, admin) -> None:
    key = as_key(await create_key(client, admin, scopes=["read"]))
    missing = "00000000-0000-7000-8000-000000000000"
    answers = [
        await client.get(f"/api/v1/tenants/{missing}", headers=key),  # 404
        await client.post("/api/v1/tenants", json={}, headers=key),  # 403
        await client.get("/api/v1/tenants?limit=0", headers=key),  # 400
        await client.get("/api/v1/tenants", headers=key),  # 200
    ]
    assert [r.status for r in answers] == [404, 403, 400, 200]
    assert [limit_headers(r) for r in answers] == [("4", "3"), ("4", "2"), ("4", "1"), ("4", "0")]
    resp = await client.get("/api/v1/tenants", headers=key)
    assert resp.status == 429
    assert int(resp.headers["Retry-After"]) > 60  # 4 an hour: the next in 15 minutes
    assert resp.headers["X-RateLimit-Reset"] == resp.headers["Retry-After"]
    assert resp.headers["RateLimit-Policy"] == '"default";q=4;w=3600'
    assert resp.headers["RateLimit"] == f'"default";r=0;t={resp.headers["Retry-After"]}'
    # Public routes are not limited.
    resp = await client.get("/health")
    assert resp.status == 200
    assert "X-RateLimit-Limit" not in resp.headers


@pytest.mark.usefixtures("redis_cleanup")
async def test_bad_credentials_are_limited_per_address_without_locking_out_keys(
    client, admin, lookups
) -> None:
    good = await create_key(client, admin)
    cached = as_key(await create_key(client, admin))
    revoked = await create_key(client, admin)
    await call(client, "DELETE", f"/api/v1/api-keys/{revoked['id']}", admin)
    lookups.clear()  # the admin key's own lookup
    assert (await client.get("/api/v1/tenants", headers=cached)).status == 200
    assert (await client.get("/api/v1/tenants", headers=cached)).status == 200
    assert len(lookups) == 1  # looked up once, then served from the cache

    # Anonymous and garbage credentials: the address's anonymous bucket, no lookups.
    anonymous = [
        ({}, "UNAUTHORIZED"),
        ({"X-API-Key": "sk_live_not-a-key"}, "INVALID_CREDENTIALS"),  # fails the checksum
        (bearer("not.a.jwt"), "INVALID_CREDENTIALS"),
        ({}, "UNAUTHORIZED"),
    ]
    for remaining, (headers, code) in enumerate(anonymous):
        resp = await client.get("/api/v1/tenants", headers=headers)
        assert (resp.status, error_code(await resp.json())) == (401, code)
        assert limit_headers(resp) == ("4", str(3 - remaining))
    for headers in ({}, bearer("x.y.z"), {"X-API-Key": "sk_live_x"}):
        resp = await client.get("/api/v1/tenants", headers=headers)
        assert resp.status == 429, headers
        assert int(resp.headers["Retry-After"]) >= 1
        assert limit_headers(resp) == ("4", "0")
    assert len(lookups) == 1

    # A well-formed key that does not authenticate: the address's lookup bucket.
    resp = await client.get("/api/v1/tenants", headers=as_key(revoked))
    assert (resp.status, error_code(await resp.json())) == (401, "INVALID_CREDENTIALS")
    assert limit_headers(resp) == ("4", "3")
    assert len(lookups) == 2

    # Neither bucket ever refuses a valid key, cached or not.
    assert (await client.get("/api/v1/tenants", headers=as_key(good))).status == 200
    assert (await client.get("/api/v1/tenants", headers=cached)).status == 200


@pytest.mark.usefixtures("redis_cleanup")
async def test_jwt_callers_are_limited_per_sub(client) -> None:
    alice = bearer(make_token(JWT_SECRET, sub="alice"))
    alice_again = bearer(make_token(JWT_SECRET, sub="alice", scopes="read"))
    bob = bearer(make_token(JWT_SECRET, sub="bob"))
    for headers in (alice, alice_again, alice, alice_again):
        assert (await client.get("/api/v1/tenants", headers=headers)).status == 200
    resp = await client.get("/api/v1/tenants", headers=alice)
    assert resp.status == 429
    resp = await client.get("/api/v1/tenants", headers=bob)
    assert resp.status == 200
    assert limit_headers(resp) == ("4", "3")


def test_reset_is_when_remaining_grows_and_agrees_with_retry_after() -> None:
    limit = Limit(10, 60)  # a token every 6 seconds
    assert Decision.from_tokens(True, 10.0, limit).reset_seconds == 0  # full
    passed = Decision.from_tokens(True, 7.5, limit)
    assert (passed.remaining, passed.reset_seconds, passed.retry_after) == (7, 3, 0)
    refused = Decision.from_tokens(False, 0.25, limit)
    assert (refused.remaining, refused.reset_seconds, refused.retry_after) == (0, 5, 5)
    assert refused.headers() == {
        "X-RateLimit-Limit": "10",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "5",
        "RateLimit-Policy": '"default";q=10;w=60',
        "RateLimit": '"default";r=0;t=5',
        "Retry-After": "5",
    }


def _reference_decision(allowed: bool, tokens: float, limit: Limit) -> Decision:
    """The bucket arithmetic as first written (min, max, floor), which from_tokens's
    plain comparisons must agree with."""
    tokens = max(0.0, min(float(limit.max), tokens))
    remaining = math.floor(tokens)
    next_token = 0.0 if remaining >= limit.max else (remaining + 1 - tokens) / limit.rate
    reset = max(1, math.ceil(next_token - 1e-9)) if next_token > 0 else 0
    return Decision(
        allowed=allowed,
        limit=limit.max,
        window_seconds=limit.window_seconds,
        remaining=remaining,
        reset_seconds=reset,
        retry_after=0 if allowed else max(1, reset),
    )


def test_decisions_agree_with_the_reference_arithmetic_and_their_headers() -> None:
    chooser = random.Random(20261127)
    for _ in range(20_000):
        limit = Limit(
            chooser.choice([1, 2, 3, 10, 60, 1000, 100_000]),
            chooser.choice([1, 7, 60, 3600, 86400]),
        )
        tokens = chooser.choice(
            [
                chooser.uniform(-2.0, limit.max + 2.0),
                float(chooser.randint(0, limit.max)),
                limit.max - 1e-9,
                chooser.randint(0, limit.max) + 1e-12,
            ]
        )
        allowed = chooser.random() < 0.5
        decision = Decision.from_tokens(allowed, tokens, limit)
        assert decision == _reference_decision(allowed, tokens, limit), (allowed, tokens, limit)
        if allowed:
            lines = "".join(f"{name}: {value}\r\n" for name, value in decision.headers().items())
            assert decision.header_lines() == lines
