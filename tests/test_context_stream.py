"""The stream of context changes: a stream-fed dict equals GET /context after random
changes; resuming from any event id gives no gap and no duplicate, on another app (a
restart, a second process) too; scoped keys; reset; heartbeats; limits."""

from __future__ import annotations

import random
from typing import Any

import pytest

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.keys import key_headers, make_key
from tests.support.sse import Event, open_stream


async def hydrate(client: Any, root: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    resp = await client.get(f"/api/v1/tenants/{root}/contexts", headers=headers)
    body = await resp.json()
    assert resp.status == 200, body
    return int(resp.headers["X-Revision"]), {c["tenant_id"]: c for c in body}


def apply(cache: dict[str, Any], events: list[Event]) -> None:
    for event in events:
        if event.name == "context":
            cache[event.data["tenant_id"]] = event.data["context"]
        elif event.name == "removed":
            cache.pop(event.data["tenant_id"], None)


async def sentinel(client: Any, root: str, headers: dict[str, str], n: int) -> int:
    """A write at the root: once its event arrives, every earlier one has."""
    resp = await client.put(
        f"/api/v1/tenants/{root}/config/sentinel", json={"value": n}, headers=headers
    )
    assert resp.status in (200, 201), await resp.json()
    return int(resp.headers["X-Revision"])


def reached(root: str, revision: int, size: int = 1):
    """Whether an event completes the sentinel's revision: `size` contexts (the subtree's
    active tenants, the root first)."""
    seen: set[str] = set()

    def done(e: Event) -> bool:
        if e.name == "context" and e.data["revision"] >= revision:
            seen.add(e.data["tenant_id"])
        return root in seen and len(seen) >= size

    return done


async def truth(client: Any, root: str, headers: dict[str, str]) -> dict[str, Any]:
    """GET /context of every active tenant of the subtree."""
    below = await get_json(client, f"/api/v1/tenants/{root}/descendants", headers)
    ids = [root, *(t["id"] for t in below)]
    return {t: await get_json(client, f"/api/v1/tenants/{t}/context", headers) for t in ids}


class World:
    """P > R > (A > A1, B), and a second tree O > (O1, O2); the stream follows R."""

    def __init__(self, client: Any, headers: dict[str, str], seed: int) -> None:
        self.client, self.headers, self.rng = client, headers, random.Random(seed)
        self.ids: dict[str, str] = {}
        self.archived: set[str] = set()

    async def build(self) -> None:
        c, h = self.client, self.headers
        self.ids["P"] = (await create_tenant(c, h))["id"]
        self.ids["R"] = (await create_tenant(c, h, parent_id=self.ids["P"]))["id"]
        for name, parent in (("A", "R"), ("B", "R"), ("A1", "A")):
            self.ids[name] = (await create_tenant(c, h, parent_id=self.ids[parent]))["id"]
        self.ids["O"] = (await create_tenant(c, h))["id"]
        for name in ("O1", "O2"):
            self.ids[name] = (await create_tenant(c, h, parent_id=self.ids["O"]))["id"]

    async def step(self, n: int) -> None:
        rng, c, h = self.rng, self.client, self.headers
        names = list(self.ids)
        target = self.ids[rng.choice(names)]
        op = rng.choice(["config", "config", "lock", "delete", "permission", "move", "move",
                         "archive", "restore", "batch"])  # fmt: skip
        if op in ("config", "lock"):
            body = {"value": rng.choice([1, "x", [n], {"n": n}]), "locked": op == "lock"}
            key = rng.choice(["k1", "k2", "k3"])
            await c.put(f"/api/v1/tenants/{target}/config/{key}", json=body, headers=h)
        elif op == "delete":
            key = rng.choice(["k1", "k2", "k3"])
            await c.delete(f"/api/v1/tenants/{target}/config/{key}", headers=h)
        elif op == "permission":
            body = {"value": rng.random() < 0.5, "mode": rng.choice(["INHERIT", "LOCKED", "LOCAL"])}
            await c.put(f"/api/v1/tenants/{target}/permissions/p{n % 3}", json=body, headers=h)
        elif op == "move":
            movable = [k for k in names if k not in ("P", "R", "O")]
            mover = self.ids[rng.choice(movable)]
            parent = self.ids[rng.choice(names)]
            await c.post(f"/api/v1/tenants/{mover}/move", json={"new_parent_id": parent}, headers=h)
        elif op == "archive":
            leaf = self.ids[rng.choice([k for k in names if k not in ("P", "R", "O")])]
            resp = await c.delete(f"/api/v1/tenants/{leaf}", headers=h)
            if resp.status == 204:
                self.archived.add(leaf)
        elif op == "restore" and self.archived:
            back = rng.choice(sorted(self.archived))
            resp = await c.post(f"/api/v1/tenants/{back}/restore", headers=h)
            if resp.status == 200:
                self.archived.discard(back)
        elif op == "batch":
            items = [{"name": "n", "slug": unique_slug(), "parent_id": target} for _ in range(2)]
            resp = await c.post("/api/v1/tenants/batch", json={"tenants": items}, headers=h)
            if resp.status == 201:
                for i, made in enumerate((await resp.json())["created"]):
                    self.ids[f"N{n}_{i}"] = made["id"]


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    return fresh_db_url


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_a_stream_fed_cache_equals_get_context_after_random_changes(
    client, admin, seed
) -> None:
    world = World(client, admin, seed)
    await world.build()
    root = world.ids["R"]
    revision, cache = await hydrate(client, root, admin)
    assert set(cache) == {world.ids[k] for k in ("R", "A", "B", "A1")}
    stream = await open_stream(client, root, admin, since=revision)
    try:
        for n in range(40):
            await world.step(n)
        last = await sentinel(client, root, admin, 1)
        want = await truth(client, root, admin)
        events = await stream.until(reached(root, last, len(want)))
    finally:
        stream.close()
    apply(cache, events)
    for t in set(cache) | set(want):
        assert cache.get(t) == want.get(t), (t, [e for e in events if e.data["tenant_id"] == t])
    ids = [tuple(map(int, e.id.split(":"))) for e in events if e.id]
    assert ids == sorted(set(ids)), "event ids in order, each once"
    assert all(e.data["revision"] == int(e.id.split(":")[0]) for e in events)


async def test_events_are_whole_contexts_and_removals(client, admin) -> None:
    world = World(client, admin, 0)
    await world.build()
    root, a, a1, o = (world.ids[k] for k in ("R", "A", "A1", "O"))
    stream = await open_stream(client, root, admin)
    assert int(stream.response.headers["X-Revision"]) > 0
    try:
        resp = await client.put(
            f"/api/v1/tenants/{a}/config/theme", json={"value": "dark"}, headers=admin
        )
        revision = int(resp.headers["X-Revision"])
        events = await stream.until(lambda e: e.data["tenant_id"] == a1)
        assert [(e.name, e.id, e.data["tenant_id"]) for e in events] == [
            ("context", f"{revision}:0", a),
            ("context", f"{revision}:1", a1),
        ]
        assert events[1].data == {
            "revision": revision,
            "tenant_id": a1,
            "context": await get_json(client, f"/api/v1/tenants/{a1}/context", admin),
        }
        # Moved out of the subtree: removed (moved), for A and A1 below it.
        resp = await client.post(
            f"/api/v1/tenants/{a}/move", json={"new_parent_id": o}, headers=admin
        )
        moved = int(resp.headers["X-Revision"])
        events = await stream.until(lambda e: e.data["tenant_id"] == a1)
        assert [(e.name, e.data) for e in events] == [
            ("removed", {"revision": moved, "tenant_id": a, "reason": "moved"}),
            ("removed", {"revision": moved, "tenant_id": a1, "reason": "moved"}),
        ]
        # Archived, then purged.
        b = world.ids["B"]
        resp = await client.delete(f"/api/v1/tenants/{b}", headers=admin)
        archived = int(resp.headers["X-Revision"])
        slug = (await get_json(client, f"/api/v1/tenants/{b}?include_archived=true", admin))["slug"]
        resp = await client.post(
            f"/api/v1/tenants/{b}/purge", json={"confirm": slug}, headers=admin
        )
        purged = int(resp.headers["X-Revision"])
        events = await stream.until(lambda e: e.data["revision"] == purged)
        assert [(e.name, e.data) for e in events] == [
            ("removed", {"revision": archived, "tenant_id": b, "reason": "archived"}),
            ("removed", {"revision": purged, "tenant_id": b, "reason": "purged"}),
        ]
        # Moved back in: its contexts.
        resp = await client.post(
            f"/api/v1/tenants/{a}/move", json={"new_parent_id": root}, headers=admin
        )
        events = await stream.until(lambda e: e.data["tenant_id"] == a1)
        assert [(e.name, e.data["tenant_id"]) for e in events] == [("context", a), ("context", a1)]
    finally:
        stream.close()


async def _full_run(
    client: Any, admin: dict[str, str], seed: int
) -> tuple[World, list[Event], int]:
    world = World(client, admin, seed)
    await world.build()
    root = world.ids["R"]
    revision, _ = await hydrate(client, root, admin)
    for n in range(30):
        await world.step(n)
    last = await sentinel(client, root, admin, 1)
    size = len(await truth(client, root, admin))
    stream = await open_stream(client, root, admin, since=revision)
    try:
        events = await stream.until(reached(root, last, size))
    finally:
        stream.close()
    return world, events, revision


async def _resume(
    client: Any, root: str, headers: dict[str, str], last_id: str, final: Event
) -> list[Event]:
    stream = await open_stream(client, root, {**headers, "Last-Event-ID": last_id})
    try:
        return await stream.until(lambda e: e.id == final.id)
    finally:
        stream.close()


def _shape(events: list[Event]) -> list[tuple[str, str | None, Any]]:
    return [(e.name, e.id, e.data) for e in events]


async def test_resuming_from_any_event_id_gives_the_rest_exactly_once(
    client, admin, aiohttp_client, settings: Settings, tmp_path
) -> None:
    world, events, revision = await _full_run(client, admin, 7)
    root = world.ids["R"]
    assert len(events) > 5
    rng = random.Random(7)
    picks = sorted(rng.sample(range(len(events) - 1), 4))
    for i in picks:
        assert _shape(await _resume(client, root, admin, events[i].id, events[-1])) == _shape(
            events[i + 1 :]
        )
    # ?since= a revision: everything after it, the same events.
    stream = await open_stream(client, root, admin, since=revision)
    try:
        assert _shape(await stream.until(lambda e: e.id == events[-1].id)) == _shape(events)
    finally:
        stream.close()
    # A restart: the first app stops, a new one on the same database resumes.
    await client.close()
    again = await aiohttp_client(
        create_app(Settings.from_env(base_env(settings.database_url, tmp_path)))
    )
    for i in picks:
        assert _shape(await _resume(again, root, admin, events[i].id, events[-1])) == _shape(
            events[i + 1 :]
        )


async def test_a_second_process_streams_changes_written_through_the_first(
    client, admin, aiohttp_client, settings: Settings, tmp_path
) -> None:
    other = await aiohttp_client(
        create_app(Settings.from_env(base_env(settings.database_url, tmp_path)))
    )
    root = (await create_tenant(client, admin))["id"]
    stream = await open_stream(other, root, admin)
    try:
        for n in range(5):
            revision = await sentinel(client, root, admin, n)
            [event] = await stream.until(reached(root, revision))
            assert event.id == f"{revision}:0"
            assert event.data["context"]["resolved_config"]["sentinel"]["value"] == n
    finally:
        stream.close()


async def test_a_scoped_key_streams_only_inside_its_subtree(client, admin) -> None:
    world = World(client, admin, 11)
    await world.build()
    root, p, o = world.ids["R"], world.ids["P"], world.ids["O"]
    scoped = await key_headers(client.app, ("read", "write"), tenant_id=root)
    # Above or beside its subtree: not found.
    await open_stream(client, p, scoped, expect=404)
    await open_stream(client, o, scoped, expect=404)
    inside = {world.ids[k] for k in ("R", "A", "B", "A1")}
    stream = await open_stream(client, root, scoped)
    try:
        for n in range(40):
            await world.step(n)
        last = await sentinel(client, root, admin, 1)
        size = len(await truth(client, root, admin))
        events = await stream.until(reached(root, last, size))
    finally:
        stream.close()
    below = await get_json(
        client, f"/api/v1/tenants/{root}/descendants?include_archived=true", admin
    )
    ever_inside = inside | {t["id"] for t in below}
    for event in events:
        if event.name == "context":
            # Whatever it is now, a context is sent only while inside the subtree.
            assert f"/{root}" in event.data["context"]["ancestry_path"]
        else:
            assert event.data["tenant_id"] in set(world.ids.values())
    outside_only = {world.ids[k] for k in ("P", "O")}
    assert not outside_only & {e.data["tenant_id"] for e in events}
    assert {e.data["tenant_id"] for e in events if e.name == "context"} <= ever_inside | {
        e.data["tenant_id"] for e in events
    }


async def test_reset_when_the_log_has_moved_on(client, admin, db_conn) -> None:
    root = (await create_tenant(client, admin))["id"]
    first = await sentinel(client, root, admin, 1)
    await sentinel(client, root, admin, 2)
    newest = await sentinel(client, root, admin, 3)
    await db_conn.execute("UPDATE context_revisions SET committed_at = now() - interval '8 days'")
    resp = await client.post("/api/v1/maintenance/purge-expired", json={}, headers=admin)
    assert (await resp.json())["context_revisions"] == newest - 1  # the newest stays
    # The removed revisions' tenant rows went with them.
    assert await db_conn.fetchval(
        "SELECT array_agg(DISTINCT revision) FROM context_revision_tenants"
    ) == [newest]
    for position in ({"since": first}, {"Last-Event-ID": f"{first}:0"}):
        headers = {**admin, **{k: v for k, v in position.items() if k != "since"}}
        params = {k: v for k, v in position.items() if k == "since"}
        stream = await open_stream(client, root, headers, **params)
        event = await stream.next()
        assert (event.name, event.id, event.data) == ("reset", None, {"revision": newest})
        assert await stream.next() is None  # the stream ends: hydrate again
    # At the horizon it follows again.
    stream = await open_stream(client, root, admin, since=newest - 1)
    try:
        [event] = await stream.until(lambda e: True)
        assert (event.name, event.id) == ("context", f"{newest}:0")
    finally:
        stream.close()


@pytest.mark.parametrize("settings_env", [{"CONTEXT_STREAM_HEARTBEAT_SECONDS": "0.05"}])
async def test_idle_streams_get_heartbeats(client, admin, settings_env) -> None:
    root = (await create_tenant(client, admin))["id"]
    stream = await open_stream(client, root, admin)
    try:
        assert await stream.comment() == "connected"
        assert await stream.comment() == "heartbeat"
        assert await stream.comment() == "heartbeat"
    finally:
        stream.close()


@pytest.mark.parametrize("settings_env", [{"CONTEXT_STREAM_HEARTBEAT_SECONDS": "0.05"}])
async def test_a_revoked_key_s_stream_ends(client, admin, settings_env) -> None:
    root = (await create_tenant(client, admin))["id"]
    issued = await make_key(client.app, ("read",))
    stream = await open_stream(client, root, {"X-API-Key": issued.plaintext})
    assert await stream.comment() == "connected"
    assert await stream.comment() == "heartbeat"
    resp = await client.delete(f"/api/v1/api-keys/{issued.key.id}", headers=admin)
    assert resp.status in (200, 204), await resp.text()
    # The next heartbeat finds the key gone: the stream ends.
    assert await stream.next() is None


@pytest.mark.parametrize("settings_env", [{"CONTEXT_STREAM_MAX_SECONDS": "0.2"}])
async def test_a_stream_ends_after_its_longest_time_and_resumes(
    client, admin, settings_env
) -> None:
    root = (await create_tenant(client, admin))["id"]
    revision = await sentinel(client, root, admin, 1)
    stream = await open_stream(client, root, admin, since=revision - 1)
    [event] = await stream.until(lambda e: True)
    assert await stream.next() is None  # ended, on the service's side
    again = await open_stream(client, root, {**admin, "Last-Event-ID": event.id})
    try:
        newer = await sentinel(client, root, admin, 2)
        [resumed] = await again.until(lambda e: True)
        assert resumed.id == f"{newer}:0"
    finally:
        again.close()


@pytest.mark.parametrize(
    "settings_env",
    [{"CONTEXT_STREAMS_PER_CALLER": "1", "CONTEXT_STREAMS_PER_PROCESS": "2"}],
)
async def test_streams_are_bounded_per_caller_and_per_process(client, settings_env) -> None:
    first, second, third = [await key_headers(client.app) for _ in range(3)]
    root = (await create_tenant(client, first))["id"]
    held = [await open_stream(client, root, first)]
    try:
        resp = await client.get(f"/api/v1/tenants/{root}/context-changes", headers=first)
        assert (resp.status, (await resp.json())["error"]["code"]) == (429, "RATE_LIMITED")
        assert resp.headers["Retry-After"] == "5"
        held.append(await open_stream(client, root, second))
        resp = await client.get(f"/api/v1/tenants/{root}/context-changes", headers=third)
        assert (resp.status, (await resp.json())["error"]["code"]) == (503, "SERVICE_UNAVAILABLE")
        assert resp.headers["Retry-After"] == "5"
    finally:
        for stream in held:
            stream.close()


async def test_bad_positions_are_400(client, admin) -> None:
    root = (await create_tenant(client, admin))["id"]
    for headers, params in (
        ({"Last-Event-ID": "x"}, {}),
        ({}, {"since": "-1"}),
        ({}, {"since": "a"}),
    ):
        resp = await client.get(
            f"/api/v1/tenants/{root}/context-changes", headers={**admin, **headers}, params=params
        )
        assert (resp.status, (await resp.json())["error"]["code"]) == (400, "VALIDATION_ERROR")


async def test_head_answers_the_headers_at_once(client, admin) -> None:
    root = (await create_tenant(client, admin))["id"]
    head = await client.head(f"/api/v1/tenants/{root}/context-changes", headers=admin)
    assert head.status == 200
    assert head.headers["Content-Type"] == "text/event-stream"
    assert await head.read() == b""
