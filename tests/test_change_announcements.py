"""What migration 0020's triggers announce on tenant_service_tenant_data for each kind of
change, and how the read cache applies an announcement (service/caches/)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from service.caches.announcements import EVERYTHING, Change, Marker, parse
from service.caches.read_cache import CachedRead, ReadCache, Rendered
from service.repositories.context import ResolvedContext
from tests.support.api import create_tenant, move, unique_slug
from tests.support.entries import put_config, put_permission

CHANNEL = "tenant_service_tenant_data"


class Heard:
    """Payloads heard on the channel; sync() returns those heard up to now (a marker
    sent after the change arrives after its announcement: commit order)."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.payloads: list[str] = []
        self._waiting: dict[str, asyncio.Event] = {}

    def on(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        text = str(payload)
        if text.startswith("marker:"):
            event = self._waiting.get(text)
            if event is not None:
                event.set()
        else:
            self.payloads.append(text)

    async def sync(self) -> list[str]:
        token = f"marker:{uuid.uuid4().hex}"
        event = self._waiting[token] = asyncio.Event()
        await self.conn.execute("SELECT pg_notify($1, $2)", CHANNEL, token)
        await asyncio.wait_for(event.wait(), 5)
        got, self.payloads = self.payloads, []
        return got


@pytest.fixture
async def heard(db_url: str) -> AsyncIterator[Heard]:
    conn = await asyncpg.connect(db_url)
    listener = Heard(conn)
    await conn.add_listener(CHANNEL, listener.on)
    try:
        yield listener
    finally:
        await conn.close()


async def test_config_and_permission_writes_announce_their_tenant(client, admin, heard) -> None:
    tenant = await create_tenant(client, admin)
    await heard.sync()
    await put_config(client, admin, tenant["id"], "plan", "gold", expect=201)
    assert await heard.sync() == [f"c{tenant['id']}"]
    await put_permission(client, admin, tenant["id"], "billing", True, expect=201)
    assert await heard.sync() == [f"c{tenant['id']}"]
    resp = await client.delete(f"/api/v1/tenants/{tenant['id']}/config/plan", headers=admin)
    assert resp.status == 204
    assert await heard.sync() == [f"c{tenant['id']}"]


async def test_own_changes_announce_only_the_tenant(client, admin, heard) -> None:
    tenant = await create_tenant(client, admin)
    path = f"/api/v1/tenants/{tenant['id']}"
    await heard.sync()
    resp = await client.patch(path, json={"name": "Renamed"}, headers=admin)
    assert resp.status == 200
    assert await heard.sync() == [f"o{tenant['id']}"]
    assert (await client.delete(path, headers=admin)).status == 204
    assert await heard.sync() == [f"o{tenant['id']}"]
    assert (await client.post(f"{path}/restore", headers=admin)).status == 200
    assert await heard.sync() == [f"o{tenant['id']}"]


async def test_a_move_announces_the_top_of_the_moved_subtree(client, admin, heard) -> None:
    old_parent = await create_tenant(client, admin)
    new_parent = await create_tenant(client, admin)
    moved = await create_tenant(client, admin, parent_id=old_parent["id"])
    below = await create_tenant(client, admin, parent_id=moved["id"])
    await create_tenant(client, admin, parent_id=below["id"])
    await heard.sync()
    status, body = await move(client, admin, moved["id"], new_parent["id"])
    assert status == 200, body
    assert await heard.sync() == [f"s{moved['id']}"]


async def test_creates_announce_nothing(client, admin, heard) -> None:
    parent = await create_tenant(client, admin)
    await heard.sync()
    await create_tenant(client, admin, parent_id=parent["id"], config={"plan": "gold"})
    items = [
        {"name": f"T{i}", "slug": unique_slug(), "parent_id": parent["id"], "config": {"k": i}}
        for i in range(5)
    ]
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=admin)
    assert resp.status == 201, await resp.text()
    assert await heard.sync() == []


async def test_statements_too_large_to_describe_announce_everything(
    client, admin, heard, db_conn
) -> None:
    parent = await create_tenant(client, admin)
    items: list[dict[str, Any]] = [
        {"name": f"T{i}", "slug": unique_slug(), "parent_id": parent["id"]} for i in range(201)
    ]
    for start in range(0, 201, 100):
        resp = await client.post(
            "/api/v1/tenants/batch", json={"tenants": items[start : start + 100]}, headers=admin
        )
        assert resp.status == 201, await resp.text()
    await heard.sync()
    await db_conn.execute(
        "UPDATE tenants SET metadata = '{\"bulk\": true}' WHERE parent_id = $1",
        uuid.UUID(parent["id"]),
    )
    assert await heard.sync() == ["*"]
    await db_conn.execute(
        "UPDATE tenants SET metadata = '{}' WHERE id = $1", uuid.UUID(parent["id"])
    )
    assert await heard.sync() == [f"o{parent['id']}"]


def test_payloads_parse_to_changes() -> None:
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    assert parse(f"o{a.upper()} c{b} s{c}") == Change(
        own=frozenset({a}), entries=frozenset({b}), subtree=frozenset({c})
    )
    assert parse("marker:abc") == Marker("abc")
    # The old trigger's payload, a truncation, or anything unknown: everything.
    bad_id = "o" + "z" * 36
    for payload in ("*", "config_entries", "", f"x{a}", "oshort", bad_id, f"c{a} {bad_id}"):
        assert parse(payload) == EVERYTHING


def _entry(tenant_id: uuid.UUID, path: str) -> CachedRead:
    node = ResolvedContext(tenant_id, path, path.count("/") - 1, "SHARED_RLS", "active", [], [])
    return CachedRead(node, Rendered(b"{}", '"e"'))


def _tree() -> tuple[ReadCache, dict[str, uuid.UUID]]:
    """root -> t -> d -> e, and root -> other; both kinds cached for each."""
    ids = {name: uuid.uuid4() for name in ("root", "t", "d", "e", "other")}
    paths = {
        "root": f"/{ids['root']}",
        "t": f"/{ids['root']}/{ids['t']}",
        "d": f"/{ids['root']}/{ids['t']}/{ids['d']}",
        "e": f"/{ids['root']}/{ids['t']}/{ids['d']}/{ids['e']}",
        "other": f"/{ids['root']}/{ids['other']}",
    }
    cache = ReadCache()
    cache.enable()
    for name, tenant_id in ids.items():
        for kind in ("tenant", "context"):
            cache.put(kind, tenant_id, _entry(tenant_id, paths[name]), cache.generation)  # type: ignore[arg-type]
    return cache, ids


def _cached(cache: ReadCache, ids: dict[str, uuid.UUID]) -> dict[str, tuple[bool, bool]]:
    return {
        name: (cache.get("tenant", i) is not None, cache.get("context", i) is not None)
        for name, i in ids.items()
    }


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        # Entries at t: t's document, the contexts of t, d and e.
        ("c", {"root": (True, True), "t": (False, False), "d": (True, False),
               "e": (True, False), "other": (True, True)}),
        # t's own row: its document and context only.
        ("o", {"root": (True, True), "t": (False, False), "d": (True, True),
               "e": (True, True), "other": (True, True)}),
        # t moved: everything of its subtree.
        ("s", {"root": (True, True), "t": (False, False), "d": (False, False),
               "e": (False, False), "other": (True, True)}),
    ],
)  # fmt: skip
def test_an_announcement_drops_what_it_names(item: str, expected: dict[str, Any]) -> None:
    cache, ids = _tree()
    cache.announced(f"{item}{ids['t']}")
    assert _cached(cache, ids) == expected
    cache.announced("*")
    assert len(cache) == 0


def test_a_read_is_refused_only_when_a_change_since_it_started_touches_it() -> None:
    cache, ids = _tree()
    e_path = f"/{ids['root']}/{ids['t']}/{ids['d']}/{ids['e']}"
    started = cache.generation
    cache.announced(f"c{ids['other']}")  # elsewhere: the read of e stays cacheable
    cache.put("context", ids["e"], _entry(ids["e"], e_path), started)
    assert cache.get("context", ids["e"]) is not None
    started = cache.generation
    cache.announced(f"c{ids['t']}")  # above e: its context may have changed
    cache.put("context", ids["e"], _entry(ids["e"], e_path), started)
    assert cache.get("context", ids["e"]) is None
    cache.put("tenant", ids["e"], _entry(ids["e"], e_path), started)  # its document did not
    assert cache.get("tenant", ids["e"]) is not None
