"""The read cache of tenants and contexts: repeated reads cost no database work, a
client reads its own writes at once, a change made by any other process (or by hand in
SQL) is seen within a second, access is checked on cached answers, revealed values are
never cached, and the cache is off while nobody listens for changes."""

from __future__ import annotations

import asyncio
import time
import uuid
from urllib.parse import urlsplit

import pytest

from service.auth.key_listener import KeyChangeListener
from service.base.etags import Rendered
from service.caches import read_cache
from service.caches.announcements import Change
from service.caches.key_cache import KeyCache
from service.caches.read_cache import CachedRead, ReadCache
from service.db.consistency import decode_token, requiring, token_key
from service.http.appkeys import DATABASE, READ_CACHE, REPOSITORIES
from service.repositories.context import ResolvedContext
from tests.conftest import HMAC_SECRET
from tests.support.access import as_key, create_key
from tests.support.announcements import all_heard
from tests.support.api import create_tenant
from tests.support.entries import context, put_config
from tests.support.tcp_proxy import TcpProxy, postgres_opener


@pytest.fixture
def resolutions(client, monkeypatch) -> list[uuid.UUID]:
    """Contexts read from the database: masked (rendered by PostgreSQL) or revealed."""
    repo = client.app[REPOSITORIES].context
    seen: list[uuid.UUID] = []
    for name in ("resolve_tenant_context", "render_tenant_context"):
        original = getattr(repo, name)

        async def counting(conn, tenant_id, original=original):
            seen.append(tenant_id)
            return await original(conn, tenant_id)

        monkeypatch.setattr(repo, name, counting)
    return seen


async def until(predicate, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while True:
        if await predicate():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)


def _entry(tenant_id: uuid.UUID) -> CachedRead:
    resolved = ResolvedContext(tenant_id, f"/{tenant_id}", 0, "SHARED_RLS", "active", [], [])
    return CachedRead(resolved, Rendered(b"{}", '"e"'))


async def test_repeated_reads_cost_no_database_work(client, admin, resolutions, db_conn) -> None:
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    await put_config(client, admin, root["id"], "plan", "gold")
    # The writes' announcements empty the cache when they arrive: let them arrive first.
    await all_heard(client.app, db_conn)
    first = await context(client, admin, child["id"])
    for _ in range(5):
        assert await context(client, admin, child["id"]) == first
    assert len(resolutions) == 1
    assert first["resolved_config"]["plan"]["value"] == "gold"


async def test_a_client_reads_its_own_writes(client, admin, resolutions) -> None:
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    await put_config(client, admin, root["id"], "plan", "gold")
    assert (await context(client, admin, child["id"]))["resolved_config"]["plan"]["value"] == (
        "gold"
    )
    # The write on the parent changes the child's context: the very next read shows it.
    await put_config(client, admin, root["id"], "plan", "platinum")
    after = await context(client, admin, child["id"])
    assert after["resolved_config"]["plan"]["value"] == "platinum"
    resp = await client.delete(f"/api/v1/tenants/{child['id']}", headers=admin)
    assert resp.status == 204
    resp = await client.get(f"/api/v1/tenants/{child['id']}/context", headers=admin)
    assert resp.status == 410
    assert (await resp.json())["error"]["code"] == "TENANT_ARCHIVED"


async def test_a_change_made_elsewhere_is_seen_once_announced(client, admin, db_conn) -> None:
    root = await create_tenant(client, admin)
    await put_config(client, admin, root["id"], "plan", "gold")
    await all_heard(client.app, db_conn)
    await context(client, admin, root["id"])
    assert client.app[READ_CACHE].get("context", uuid.UUID(root["id"])) is not None
    # Another process (here: a plain SQL session) changes the entry.
    await db_conn.execute(
        "UPDATE config_entries SET value = '\"tin\"' WHERE tenant_id = $1 AND key = 'plan'",
        uuid.UUID(root["id"]),
    )
    await all_heard(client.app, db_conn)  # its announcement arrives (milliseconds)
    assert client.app[READ_CACHE].get("context", uuid.UUID(root["id"])) is None
    ctx = await context(client, admin, root["id"])
    assert ctx["resolved_config"]["plan"]["value"] == "tin"


async def test_access_is_checked_on_cached_answers(client, admin, db_conn) -> None:
    mine = await create_tenant(client, admin)
    other = await create_tenant(client, admin)
    scoped = as_key(await create_key(client, admin, tenant_id=mine["id"]))
    await all_heard(client.app, db_conn)
    await context(client, admin, other["id"])  # now cached
    assert client.app[READ_CACHE].get("context", uuid.UUID(other["id"])) is not None
    resp = await client.get(f"/api/v1/tenants/{other['id']}/context", headers=scoped)
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "TENANT_NOT_FOUND"
    assert (await client.get(f"/api/v1/tenants/{mine['id']}/context", headers=scoped)).status == 200


async def test_revealed_values_are_never_cached(client, admin, resolutions, db_conn) -> None:
    tenant = await create_tenant(client, admin)
    resp = await client.put(
        f"/api/v1/tenants/{tenant['id']}/config/api_token",
        json={"value": "s3cr3t", "sensitive": True},
        headers=admin,
    )
    assert resp.status in (200, 201), await resp.text()
    await all_heard(client.app, db_conn)
    for _ in range(2):
        revealed = await context(client, admin, tenant["id"], reveal=True)
        assert revealed["resolved_config"]["api_token"]["value"] == "s3cr3t"
    assert len(resolutions) == 2
    masked = await context(client, admin, tenant["id"])
    assert masked["resolved_config"]["api_token"]["value"] == "***"
    cached = client.app[READ_CACHE].get("context", uuid.UUID(tenant["id"]))
    assert cached is not None
    assert b"s3cr3t" not in cached.rendered.body


def test_a_resolution_overtaken_by_a_change_is_not_cached() -> None:
    cache = ReadCache()
    cache.enable()
    tenant_id = uuid.uuid4()
    started = cache.generation
    cache.clear()  # a change was announced while the resolution ran
    cache.put("context", tenant_id, _entry(tenant_id), started)
    assert cache.get("context", tenant_id) is None
    cache.put("context", tenant_id, _entry(tenant_id), cache.generation)
    assert cache.get("context", tenant_id) is not None


def test_only_changes_since_the_read_began_refuse_it() -> None:
    """A change of the tenant heard before the read began does not refuse it; one heard
    after it does, even with later changes of other tenants heard since."""
    cache = ReadCache()
    cache.enable()
    tenant_id, other = uuid.uuid4(), uuid.uuid4()
    cache.invalidate(Change(own=frozenset({str(tenant_id)})))
    started = cache.generation
    cache.invalidate(Change(own=frozenset({str(other)})))
    cache.put("context", tenant_id, _entry(tenant_id), started)
    assert cache.get("context", tenant_id) is not None
    started = cache.generation
    cache.invalidate(Change(own=frozenset({str(tenant_id)})))
    for _ in range(3):
        cache.invalidate(Change(own=frozenset({str(other)})))
    cache.put("context", tenant_id, _entry(tenant_id), started)
    assert cache.get("context", tenant_id) is None


def test_the_cache_keeps_its_most_recent_entries() -> None:
    cache = ReadCache(max_entries=2)
    cache.enable()
    ids = [uuid.uuid4() for _ in range(3)]
    for tenant_id in ids:
        cache.put("context", tenant_id, _entry(tenant_id), cache.generation)
    assert [cache.get("context", i) is not None for i in ids] == [False, True, True]
    off = ReadCache(max_entries=0)
    off.enable()
    off.put("context", ids[0], _entry(ids[0]), off.generation)
    assert not off.enabled
    assert off.get("context", ids[0]) is None


async def test_listener_outage_turns_the_read_cache_off(client, db_url, db_conn) -> None:
    proxy = TcpProxy(opener=postgres_opener(db_url))
    await proxy.start()
    database = urlsplit(db_url).path.lstrip("/")
    contexts = ReadCache()
    listener = KeyChangeListener(
        f"postgresql://postgres@127.0.0.1:{proxy.port}/{database}",
        KeyCache(),
        client.app[REPOSITORIES].health.ping,
        contexts,
    )
    tenant_id = uuid.uuid4()
    try:
        await listener.start()
        assert contexts.enabled
        contexts.put("context", tenant_id, _entry(tenant_id), contexts.generation)
        await db_conn.execute("SELECT pg_notify('tenant_service_tenant_data', '*')")

        async def gone() -> bool:
            return contexts.get("context", tenant_id) is None

        assert await until(gone)

        await proxy.stop()

        async def off() -> bool:
            return not contexts.enabled

        assert await until(off)
        contexts.put("context", tenant_id, _entry(tenant_id), contexts.generation)
        assert contexts.get("context", tenant_id) is None

        await proxy.start()

        async def on() -> bool:
            return contexts.enabled

        assert await until(on, within=20.0)
    finally:
        await listener.stop()
        await proxy.stop()
    assert not contexts.enabled


@pytest.fixture
def tenant_reads(client, monkeypatch) -> list[uuid.UUID]:
    repo = client.app[REPOSITORIES].tenants
    seen: list[uuid.UUID] = []
    original = repo.get_tenant

    async def counting(conn, tenant_id):
        seen.append(tenant_id)
        return await original(conn, tenant_id)

    monkeypatch.setattr(repo, "get_tenant", counting)
    return seen


async def test_tenant_reads_are_cached_and_fresh(client, admin, tenant_reads, db_conn) -> None:
    tenant = await create_tenant(client, admin, name="Before")
    await all_heard(client.app, db_conn)
    path = f"/api/v1/tenants/{tenant['id']}"
    first = await client.get(path, headers=admin)
    body, etag = await first.json(), first.headers["ETag"]
    for _ in range(3):
        again = await client.get(path, headers=admin)
        assert (await again.json(), again.headers["ETag"]) == (body, etag)
    assert len(tenant_reads) == 1
    assert body == tenant  # the cached document is the one the create answered

    resp = await client.patch(path, json={"name": "After"}, headers={**admin, "If-Match": etag})
    assert resp.status == 200
    patched = await resp.json()
    after = await client.get(path, headers=admin)
    assert await after.json() == patched
    assert after.headers["ETag"] == resp.headers["ETag"] != etag

    assert (await client.delete(path, headers=admin)).status == 204
    gone = await client.get(path, headers=admin)
    assert gone.status == 410
    archived = await client.get(f"{path}?include_archived=true", headers=admin)
    assert (await archived.json())["status"] == "archived"


async def test_tenant_access_is_checked_on_cached_answers(client, admin, db_conn) -> None:
    mine = await create_tenant(client, admin)
    other = await create_tenant(client, admin)
    scoped = as_key(await create_key(client, admin, tenant_id=mine["id"]))
    await all_heard(client.app, db_conn)
    assert (await client.get(f"/api/v1/tenants/{other['id']}", headers=admin)).status == 200
    assert client.app[READ_CACHE].get("tenant", uuid.UUID(other["id"])) is not None
    resp = await client.get(f"/api/v1/tenants/{other['id']}", headers=scoped)
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "TENANT_NOT_FOUND"


async def test_only_authenticated_writes_wait_for_announcements(
    client, admin, db_conn, monkeypatch
) -> None:
    tenant = await create_tenant(client, admin)
    await all_heard(client.app, db_conn)
    await context(client, admin, tenant["id"])
    cache = client.app[READ_CACHE]
    repo = client.app[REPOSITORIES].read_cache
    markers: list[str] = []
    original = repo.announce_marker

    async def counting(conn, token):
        markers.append(token)
        return await original(conn, token)

    monkeypatch.setattr(repo, "announce_marker", counting)
    for headers in ({}, {"X-API-Key": "sk_live_" + "x" * 40}):
        resp = await client.post("/api/v1/tenants", json={}, headers=headers)
        assert resp.status == 401
    assert markers == []
    resp = await client.post("/api/v1/tenants", json={}, headers=admin)
    assert resp.status == 400  # refused, but the caller could write: it waits for its marker
    assert len(markers) == 1
    # Nothing changed, so nothing was dropped.
    assert cache.get("context", uuid.UUID(tenant["id"])) is not None


def _placed(tenant_id: uuid.UUID, path: str) -> CachedRead:
    resolved = ResolvedContext(tenant_id, path, 0, "SHARED_RLS", "active", [], [])
    return CachedRead(resolved, Rendered(b"{}", '"e"'))


def test_a_replica_read_behind_a_heard_change_is_not_cached() -> None:
    """The invariant of docs/scaling.md, "Caches": a replica's read is cached only once
    it has replayed every heard change that touches its tenant."""
    cache = ReadCache()
    cache.enable()
    cache.positioned(cache.generation, 100)  # the enable's "everything"
    changed, untouched = uuid.uuid4(), uuid.uuid4()
    cache.invalidate(Change(own=frozenset({str(changed)})))
    # Its position is not sampled yet: no replica position is enough.
    assert cache.behind("tenant", changed, f"/{changed}", 10**12)
    assert not cache.positioned_all
    cache.positioned(cache.generation, 200)
    assert cache.positioned_all
    started = cache.generation
    for replayed, kept in ((150, False), (200, True)):
        assert cache.behind("tenant", changed, f"/{changed}", replayed) is not kept
        cache.put("tenant", changed, _placed(changed, f"/{changed}"), started, replayed)
        assert (cache.get("tenant", changed) is not None) is kept
    # The change does not touch another tenant: a replica at 150 has all it needs.
    assert not cache.behind("tenant", untouched, f"/{untouched}", 150)
    cache.put("tenant", untouched, _placed(untouched, f"/{untouched}"), started, 150)
    assert cache.get("tenant", untouched) is not None
    # Not found on the replica (path unknown): judged by its own id.
    assert cache.behind("tenant", changed, None, 150)
    # A change of an ancestor's entries reaches the contexts below it.
    cache.invalidate(Change(entries=frozenset({str(untouched)})))
    cache.positioned(cache.generation, 300)
    below = uuid.uuid4()
    assert cache.behind("context", below, f"/{untouched}/{below}", 250)
    assert not cache.behind("tenant", below, f"/{untouched}/{below}", 250)


def test_a_replica_behind_forgotten_changes_is_not_trusted(monkeypatch) -> None:
    monkeypatch.setattr(read_cache, "RECENT_CHANGES", 4)
    cache = ReadCache()
    cache.enable()
    other, tenant_id = uuid.uuid4(), uuid.uuid4()
    for position in range(1, 10):
        cache.invalidate(Change(own=frozenset({str(other)})))
        cache.positioned(cache.generation, position * 100)
    # The changes that fell out of the list may have touched anything.
    assert cache.behind("tenant", tenant_id, f"/{tenant_id}", 450)
    assert not cache.behind("tenant", tenant_id, f"/{tenant_id}", 900)
    # Forgotten before their position arrived: nothing is trusted until it does.
    for _ in range(6):
        cache.invalidate(Change(own=frozenset({str(other)})))
    assert cache.behind("tenant", tenant_id, f"/{tenant_id}", 10**12)
    cache.positioned(cache.generation, 2000)
    assert not cache.behind("tenant", tenant_id, f"/{tenant_id}", 2000)
    assert cache.behind("tenant", tenant_id, f"/{tenant_id}", 1999)


async def test_each_heard_change_gets_the_primary_position_sampled_after_it() -> None:
    cache = ReadCache()
    answers: list[int | None] = [None, 700]  # the first sample fails: asked again
    asked = asyncio.Event()

    async def source() -> int | None:
        asked.set()
        return answers.pop(0)

    cache.track_positions(source)
    cache.enable()
    tenant_id = uuid.uuid4()
    cache.announced(f"o{tenant_id}")
    async with asyncio.timeout(10):
        await asked.wait()
        await cache.wait_positioned()
    assert cache.positioned_all
    assert not cache.behind("tenant", tenant_id, f"/{tenant_id}", 700)
    assert cache.behind("tenant", tenant_id, f"/{tenant_id}", 699)
    await cache.stop()


def test_a_replica_read_that_overlaps_a_change_of_its_tenant_is_not_cached() -> None:
    """The generation rule holds for replica reads too: a replica far ahead of every
    recorded position still may have read before the change reached it."""
    cache = ReadCache()
    cache.enable()
    tenant_id = uuid.uuid4()
    started = cache.generation
    cache.invalidate(Change(own=frozenset({str(tenant_id)})))
    cache.positioned(cache.generation, 100)
    assert not cache.behind("tenant", tenant_id, f"/{tenant_id}", 10**6)
    cache.put("tenant", tenant_id, _placed(tenant_id, f"/{tenant_id}"), started, 10**6)
    assert cache.get("tenant", tenant_id) is None
    cache.put("tenant", tenant_id, _placed(tenant_id, f"/{tenant_id}"), cache.generation, 10**6)
    assert cache.get("tenant", tenant_id) is not None


def test_a_read_with_a_consistency_token_is_never_answered_from_the_cache() -> None:
    """The token's write may come from another process whose announcement this one has
    not heard yet: only a database server that has the write may answer."""
    cache = ReadCache()
    cache.enable()
    tenant_id = uuid.uuid4()
    cache.put("tenant", tenant_id, _entry(tenant_id), cache.generation)
    assert cache.get("tenant", tenant_id) is not None
    with requiring(12345):
        assert cache.get("tenant", tenant_id) is None
    assert cache.get("tenant", tenant_id) is not None


async def test_a_write_reads_the_wal_position_once_without_replicas(
    client, admin, db_conn, monkeypatch
) -> None:
    # Without replicas nothing needs the positions of heard changes, and the write's
    # consistency token comes with its read-your-writes marker: no extra round trip.
    tenant = await create_tenant(client, admin)
    await all_heard(client.app, db_conn)
    database = client.app[DATABASE]
    reads: list[int] = []
    original = database._positions.current_position

    async def counting(conn):
        reads.append(1)
        return await original(conn)

    before = await database.write_position()
    assert before is not None
    monkeypatch.setattr(database._positions, "current_position", counting)
    resp = await client.put(
        f"/api/v1/tenants/{tenant['id']}/config/feature.flag", json={"value": True}, headers=admin
    )
    assert resp.status == 201
    token = decode_token(resp.headers["X-Consistency-Token"], token_key(HMAC_SECRET.encode()))
    await all_heard(client.app, db_conn)
    assert reads == []
    monkeypatch.undo()
    # The token lies past the write's commit record, and not past the primary's now.
    after = await database.write_position()
    assert after is not None
    assert before < token <= after
