"""Rate limits kept in Redis: state under REDIS_KEY_PREFIX, and an outage of Redis
that the service rides out (limiting per process, logged once) and recovers from."""

from __future__ import annotations

import asyncio
import secrets

import pytest
import redis.asyncio as redis_client

from service.app import create_app
from service.ratelimit.limiter import RETRY_REDIS_SECONDS
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.access import as_key, create_key
from tests.support.keys import key_headers
from tests.support.tcp_proxy import TcpProxy

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


@pytest.fixture
def prefix() -> str:
    return f"tsvc-test-{secrets.token_hex(6)}:"


@pytest.fixture
async def redis_conn(prefix):
    conn = redis_client.Redis(host=REDIS_HOST, port=REDIS_PORT)
    yield conn
    keys = [k async for k in conn.scan_iter(match=prefix + "*")]
    if keys:
        await conn.delete(*keys)
    await conn.aclose()


@pytest.fixture
async def proxy():
    tcp = TcpProxy(REDIS_HOST, REDIS_PORT)
    await tcp.start()
    yield tcp
    await tcp.stop()


async def start_client(aiohttp_client, db_url, tmp_path, **env):
    settings = Settings.from_env(base_env(db_url, tmp_path, **env))
    return await aiohttp_client(create_app(settings))


async def test_state_lives_under_the_prefix(aiohttp_client, db_url, tmp_path, prefix,
                                            redis_conn) -> None:  # fmt: skip
    client = await start_client(
        aiohttp_client, db_url, tmp_path,
        REDIS_URL=f"redis://{REDIS_HOST}:{REDIS_PORT}", REDIS_KEY_PREFIX=prefix,
    )  # fmt: skip
    admin = await key_headers(client.app)
    created = await create_key(client, admin, rate_limit_max=10, rate_limit_window="1 hour")
    assert (await client.get("/api/v1/tenants", headers=as_key(created))).status == 200
    name = f"{prefix}ratelimit:key:{created['id']}"
    state = await redis_conn.hgetall(name)
    assert 8.9 < float(state[b"tokens"]) < 9.1
    assert 0 < await redis_conn.pttl(name) <= 3_601_000
    # Every key this service wrote carries the prefix.
    assert all(k.startswith(prefix.encode()) for k in await redis_conn.keys(prefix + "*"))


async def test_redis_outage_keeps_serving_and_is_logged_once(
    aiohttp_client, db_url, tmp_path, prefix, redis_conn, proxy, capsys
) -> None:
    client = await start_client(
        aiohttp_client, db_url, tmp_path,
        REDIS_URL=f"redis://127.0.0.1:{proxy.port}", REDIS_KEY_PREFIX=prefix,
    )  # fmt: skip
    admin = await key_headers(client.app)
    key = as_key(await create_key(client, admin, rate_limit_max=5, rate_limit_window="1 hour"))

    resp = await client.get("/api/v1/tenants", headers=key)
    assert (resp.status, resp.headers["X-RateLimit-Remaining"]) == (200, "4")

    await proxy.stop()
    capsys.readouterr()
    remaining = []
    for _ in range(3):
        resp = await client.get("/api/v1/tenants", headers=key)
        assert resp.status == 200  # never a 5xx because of Redis
        remaining.append(resp.headers["X-RateLimit-Remaining"])
    # Meanwhile the process limits on its own (its bucket starts full).
    assert remaining == ["4", "3", "2"]
    assert capsys.readouterr().out.count("Redis unreachable") == 1

    await proxy.start()
    await asyncio.sleep(RETRY_REDIS_SECONDS + 0.1)
    resp = await client.get("/api/v1/tenants", headers=key)
    assert resp.status == 200
    # Back on the shared bucket, which still remembers the first request.
    assert resp.headers["X-RateLimit-Remaining"] == "3"
    out = capsys.readouterr().out
    assert out.count("Redis answers again") == 1
    assert "Redis unreachable" not in out
