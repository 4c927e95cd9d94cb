"""The key cache: no database round trip on the hot path, changes made anywhere reach
the cache within a second through LISTEN/NOTIFY, and the cache is off (never stale)
while the listener connection is down."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from service.auth.key_listener import KeyChangeListener
from service.auth.usage import UsageRecorder
from service.caches.key_cache import KeyCache
from service.http.appkeys import AUTHENTICATOR, DATABASE, REPOSITORIES
from service.repositories.api_keys import KeyCredentials
from tests.support.access import as_key, create_key, create_role
from tests.support.announcements import all_heard
from tests.support.api import unique_slug
from tests.support.tcp_proxy import TcpProxy, postgres_opener


@pytest.fixture
def lookups(client, monkeypatch) -> list[bytes]:
    repo = client.app[REPOSITORIES].api_keys
    seen: list[bytes] = []
    original = repo.get_api_key_for_auth

    async def counting(conn, key_hash):
        seen.append(key_hash)
        return await original(conn, key_hash)

    monkeypatch.setattr(repo, "get_api_key_for_auth", counting)
    return seen


async def status_of(client, headers, method="GET", path="/api/v1/tenants") -> int:
    json = {"name": "c", "slug": unique_slug("c")} if method == "POST" else None
    resp = await client.request(method, path, headers=headers, json=json)
    return resp.status


async def until(predicate, within: float = 10.0) -> bool:
    """Poll an async predicate until it holds; `within` only bounds a lost listener."""
    deadline = time.monotonic() + within
    while True:
        if await predicate():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)


async def test_hot_path_costs_no_lookup(client, admin, lookups, db_conn) -> None:
    created = await create_key(client, admin)
    await all_heard(client.app, db_conn)  # the new key's announcement, before it is cached
    lookups.clear()
    for _ in range(20):
        assert await status_of(client, as_key(created)) == 200
    assert len(lookups) == 1


async def test_changes_from_outside_the_process_arrive_within_a_second(
    client, admin, db_conn, lookups
) -> None:
    key = await create_key(client, admin, scopes=["read"])
    role = await create_role(client, admin, scopes=["read", "write"])
    headers = as_key(key)
    assert await status_of(client, headers) == 200
    # Changes written straight into the database (another process, the CLI, a DBA).
    await db_conn.execute("UPDATE api_keys SET role_id = $1 WHERE id = $2", role["id"], key["id"])
    assert await until(lambda: _is(client, headers, "POST", 201))
    await db_conn.execute("UPDATE roles SET scopes = '{read}' WHERE id = $1", role["id"])
    assert await until(lambda: _is(client, headers, "POST", 403))
    await db_conn.execute("UPDATE api_keys SET revoked_at = now() WHERE id = $1", key["id"])
    assert await until(lambda: _is(client, headers, "GET", 401))


async def test_last_used_at_writes_do_not_flush_the_cache(client, admin, db_conn, lookups) -> None:
    created = await create_key(client, admin)
    await all_heard(client.app, db_conn)
    lookups.clear()
    assert await status_of(client, as_key(created)) == 200
    await db_conn.execute(
        "UPDATE api_keys SET last_used_at = now() - interval '1 hour', name = 'renamed' "
        "WHERE id = $1",
        created["id"],
    )
    await all_heard(client.app, db_conn)  # an announcement, were one sent, has arrived
    assert await status_of(client, as_key(created)) == 200
    assert len(lookups) == 1


async def test_cache_is_off_while_the_listener_is_down(client, admin, db_conn, lookups) -> None:
    authenticator = client.app[AUTHENTICATOR]
    assert authenticator.cache.enabled
    created = await create_key(client, admin)
    headers = as_key(created)
    assert await status_of(client, headers) == 200

    old_pids = await _listener_pids(db_conn)
    assert len(old_pids) == 1
    assert await db_conn.fetchval("SELECT pg_terminate_backend($1)", old_pids[0])

    # The listener reconnects by itself, and the cache is trusted again afterwards.
    async def back() -> bool:
        pids = await _listener_pids(db_conn)
        return len(pids) == 1 and pids != old_pids and authenticator.cache.enabled

    assert await until(back, within=20.0)
    before = authenticator.cache.generation
    await db_conn.execute(
        "UPDATE api_keys SET scopes = '{read,write}' WHERE id = $1", created["id"]
    )
    # The new listener hears the change...
    assert await until(lambda: _moved_past(authenticator.cache, before))
    lookups.clear()
    assert await status_of(client, headers, "POST") == 201
    # ...and the key is cached again afterwards.
    for _ in range(3):
        assert await status_of(client, headers) == 200
    assert len(lookups) == 1


async def test_listener_outage_turns_the_cache_off(client, db_url, db_conn) -> None:
    """A listener whose connection is cut keeps the cache off until it is back, so no
    announcement missed meanwhile can leave a stale entry behind."""
    proxy = TcpProxy(opener=postgres_opener(db_url))
    await proxy.start()
    database = urlsplit(db_url).path.lstrip("/")
    cache = KeyCache()
    listener = KeyChangeListener(
        f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}",
        cache,
        client.app[REPOSITORIES].health.ping,
    )
    creds = _creds(uuid.uuid4())
    try:
        await listener.start()
        assert cache.enabled
        cache.put(b"h", creds, cache.generation)
        assert cache.get(b"h") == creds
        await db_conn.execute("SELECT pg_notify('tenant_service_api_keys', $1)", f"key:{creds.id}")
        assert await until(lambda: _gone(cache, b"h"))

        await proxy.stop()
        assert await until(lambda: _cache_off(listener))
        cache.put(b"h", creds, cache.generation)
        assert cache.get(b"h") is None  # nothing is cached while nobody listens
        await asyncio.sleep(0.5)  # reconnection attempts fail meanwhile
        assert not cache.enabled

        await proxy.start()
        assert await until(lambda: _cache_on(listener), within=20.0)
        cache.put(b"h", creds, cache.generation)
        assert cache.get(b"h") == creds
        await db_conn.execute(
            "SELECT pg_notify('tenant_service_api_keys', $1)", f"role:{creds.role_id}"
        )
        assert await until(lambda: _gone(cache, b"h"))
    finally:
        await listener.stop()
        await proxy.stop()


async def test_usage_still_queued_is_written_when_the_app_stops(client, admin, db_conn) -> None:
    created = await create_key(client, admin)
    recorder = UsageRecorder(client.app[DATABASE], client.app[REPOSITORIES].api_keys)
    used_at = datetime.now(UTC) - timedelta(seconds=5)
    recorder.record(created["id"], None, used_at)
    assert recorder.pending == 1  # never started: nothing has written it yet
    await recorder.stop()
    assert recorder.pending == 0
    stored = await db_conn.fetchval(
        "SELECT last_used_at FROM api_keys WHERE id = $1", created["id"]
    )
    assert abs((stored - used_at).total_seconds()) < 0.001


async def test_last_used_at_is_written_at_most_once_a_minute(client, admin, db_conn) -> None:
    created = await create_key(client, admin)
    repo = client.app[REPOSITORIES].api_keys
    first = datetime.now(UTC) - timedelta(minutes=10)

    async def touch(at: datetime) -> datetime:
        await repo.touch_api_keys(db_conn, {created["id"]: at})
        value: datetime = await db_conn.fetchval(
            "SELECT last_used_at FROM api_keys WHERE id = $1", created["id"]
        )
        return value

    assert await touch(first) == first
    # Another process reporting a use 30 seconds later changes nothing...
    assert await touch(first + timedelta(seconds=30)) == first
    # ...one a minute later does.
    assert await touch(first + timedelta(seconds=61)) == first + timedelta(seconds=61)


async def _is(client, headers, method: str, expected: int) -> bool:
    return await status_of(client, headers, method) == expected


async def _cache_off(holder) -> bool:
    return not holder.cache.enabled


async def _cache_on(holder) -> bool:
    return holder.cache.enabled


async def _moved_past(cache: KeyCache, generation: int) -> bool:
    return cache.generation > generation


async def _gone(cache: KeyCache, key_hash: bytes) -> bool:
    return cache.get(key_hash) is None


async def _listener_pids(db_conn) -> list[int]:
    rows = await db_conn.fetch(
        "SELECT pid FROM pg_stat_activity "
        "WHERE application_name = 'tenant-service-listener' AND datname = current_database()"
    )
    return [r["pid"] for r in rows]


def _creds(key_id: uuid.UUID) -> KeyCredentials:
    return KeyCredentials(
        id=key_id, tenant_id=None, scopes=["read"], role_id=uuid.uuid4(), environment="live",
        rate_limit_max=None, rate_limit_window_seconds=None, expires_at=None,
        revoked_at=None, last_used_at=None, role_scopes=None,
    )  # fmt: skip
