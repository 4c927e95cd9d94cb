"""A batch create costs one rate-limit token per item (issue 16, item 11), so a key cannot
test 100 slugs for existence at the price of one request. Buckets in the process and in
Redis alike (limits per day: no token comes back while a test runs)."""

from __future__ import annotations

import secrets

import pytest
import redis.asyncio as redis_client

from service.http.appkeys import SETTINGS
from tests.support.access import call, error_code
from tests.support.api import create_tenant, unique_slug
from tests.support.keys import key_headers

REDIS_URL = "redis://127.0.0.1:6379"


@pytest.fixture(params=["local", "redis"])
def settings_env(request) -> dict[str, str]:
    if request.param == "local":
        return {}
    return {"REDIS_URL": REDIS_URL, "REDIS_KEY_PREFIX": f"tsvc-test-{secrets.token_hex(6)}:"}


@pytest.fixture(autouse=True)
async def redis_cleanup(client):
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


def _items(parent_id: str, count: int, slugs: list[str] | None = None) -> list[dict[str, str]]:
    slugs = slugs or [unique_slug() for _ in range(count)]
    return [{"name": f"T{i}", "slug": s, "parent_id": parent_id} for i, s in enumerate(slugs)]


async def test_each_item_costs_one_token(client, admin, db_conn) -> None:
    home = await create_tenant(client, admin)
    limited = await key_headers(
        client.app, tenant_id=home["id"], rate_limit_max=150, rate_limit_window_seconds=86400,
        rate_limit_window="1 day",
    )  # fmt: skip
    resp = await client.post(
        "/api/v1/tenants/batch", json={"tenants": _items(home["id"], 100)}, headers=limited
    )
    assert resp.status == 201, await resp.json()
    assert resp.headers["X-RateLimit-Remaining"] == "50"
    before = await db_conn.fetchval("SELECT count(*) FROM tenants")
    resp = await client.post(
        "/api/v1/tenants/batch", json={"tenants": _items(home["id"], 60)}, headers=limited
    )
    body = await resp.json()
    assert (resp.status, error_code(body)) == (429, "RATE_LIMITED")
    assert int(resp.headers["Retry-After"]) >= 1
    assert await db_conn.fetchval("SELECT count(*) FROM tenants") == before
    # What is left still serves smaller batches and single requests.
    resp = await client.post(
        "/api/v1/tenants/batch", json={"tenants": _items(home["id"], 40)}, headers=limited
    )
    assert (resp.status, resp.headers["X-RateLimit-Remaining"]) == (201, "9")


async def test_probing_slugs_costs_one_token_per_slug(client, admin) -> None:
    theirs = [(await create_tenant(client, admin))["slug"] for _ in range(3)]
    home = await create_tenant(client, admin)
    prober = await key_headers(
        client.app, tenant_id=home["id"], rate_limit_max=20, rate_limit_window_seconds=86400,
        rate_limit_window="1 day",
    )  # fmt: skip
    guesses = [*theirs, *(unique_slug() for _ in range(7))]
    resp = await client.post(
        "/api/v1/tenants/batch", json={"tenants": _items(home["id"], 10, guesses)}, headers=prober
    )
    assert resp.status == 409
    assert resp.headers["X-RateLimit-Remaining"] == "10"
    # A batch larger than the key's whole budget could never pass: 400, not a 429 loop.
    status, body = await call(client, "POST", "/api/v1/tenants/batch", prober,
                              {"tenants": _items(home["id"], 21)})  # fmt: skip
    assert (status, error_code(body)) == (400, "VALIDATION_ERROR")
    assert body["error"]["details"] == [
        {
            "field": "tenants",
            "message": "at most 20 items: each item counts as one request "
            "against this caller's rate limit of 20 per 86400 s",
        }
    ]
