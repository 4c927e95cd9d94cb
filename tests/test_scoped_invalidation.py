"""Scoped invalidation across processes: two app instances on one database, each with its
own read cache and listener. A change at T is seen at once below T in both (the writer
before its answer leaves, the other once it has heard the announcement) while cached
entries elsewhere survive; moves, archive, restore and batch creates; and a read that
overlaps a change of its tenant is not cached, while one that overlaps a change
elsewhere is."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.caches.read_cache import Kind, ReadCache
from service.http.appkeys import READ_CACHE, REPOSITORIES
from service.http.middlewares.freshness import hear_own_changes
from service.settings.options import Settings
from tests.support.api import create_tenant, get_json, move, unique_slug
from tests.support.entries import context, put_config
from tests.support.waiting import reached


@pytest.fixture
async def other(settings: Settings, aiohttp_client: Any) -> TestClient:
    """A second instance of the service on the same database (another process)."""
    result: TestClient = await aiohttp_client(create_app(settings))
    return result


def cache_of(client: TestClient) -> ReadCache:
    return client.app[READ_CACHE]


async def warm(clients: list[TestClient], headers: dict[str, str], ids: list[str]) -> None:
    """Both kinds of document of each tenant cached in each instance."""
    for c in clients:
        for tenant_id in ids:
            await get_json(c, f"/api/v1/tenants/{tenant_id}", headers)
            await context(c, headers, tenant_id)


def cached(client: TestClient, kind: Kind, tenant_id: str) -> bool:
    return cache_of(client).get(kind, uuid.UUID(tenant_id)) is not None


def held(client: TestClient, tenant_id: str) -> tuple[bool, bool]:
    """Whether the tenant document and the context are cached."""
    return cached(client, "tenant", tenant_id), cached(client, "context", tenant_id)


async def tree(client: TestClient, headers: dict[str, str]) -> dict[str, str]:
    """root -> t -> d -> e; root -> sibling; and an unrelated root elsewhere."""
    root = await create_tenant(client, headers)
    t = await create_tenant(client, headers, parent_id=root["id"])
    d = await create_tenant(client, headers, parent_id=t["id"])
    e = await create_tenant(client, headers, parent_id=d["id"])
    sibling = await create_tenant(client, headers, parent_id=root["id"])
    elsewhere = await create_tenant(client, headers)
    return {
        "root": root["id"], "t": t["id"], "d": d["id"], "e": e["id"],
        "sibling": sibling["id"], "elsewhere": elsewhere["id"],
    }  # fmt: skip


async def test_a_config_change_is_seen_below_it_in_every_process(client, other, admin) -> None:
    ids = await tree(client, admin)
    await put_config(client, admin, ids["t"], "plan", "gold", expect=201)
    clients = [client, other]
    await hear_own_changes(other.app)
    await warm(clients, admin, list(ids.values()))

    await put_config(client, admin, ids["t"], "plan", "platinum", expect=200)
    # The writer: at once, before any other request.
    assert (await context(client, admin, ids["e"]))["resolved_config"]["plan"]["value"] == (
        "platinum"
    )
    # The other process, once it has heard the announcement.
    await hear_own_changes(other.app)
    for c in clients:
        assert not cached(c, "context", ids["d"]), "context below T is dropped"
        assert not cached(c, "tenant", ids["t"]), "T's own document is dropped"
        for name in ("root", "sibling", "elsewhere"):
            assert held(c, ids[name]) == (True, True), name
        assert cached(c, "tenant", ids["d"]), "documents below T do not hold T's config"
        for tenant_id in (ids["t"], ids["d"], ids["e"]):
            ctx = await context(c, admin, tenant_id)
            assert ctx["resolved_config"]["plan"]["value"] == "platinum"


async def test_a_move_drops_the_subtree_at_both_positions(client, other, admin) -> None:
    ids = await tree(client, admin)
    target = await create_tenant(client, admin)
    clients = [client, other]
    await hear_own_changes(other.app)
    await warm(clients, admin, [*ids.values(), target["id"]])

    status, body = await move(client, admin, ids["t"], target["id"])
    assert status == 200, body
    await hear_own_changes(other.app)
    for c in clients:
        for name in ("t", "d", "e"):
            assert held(c, ids[name]) == (False, False)
        for name in ("root", "sibling", "elsewhere"):
            assert held(c, ids[name]) == (True, True), name
        assert held(c, target["id"]) == (True, True)
        moved = await get_json(c, f"/api/v1/tenants/{ids['e']}", admin)
        assert moved["ancestry_path"] == f"/{target['id']}/{ids['t']}/{ids['d']}/{ids['e']}"
        ctx = await context(c, admin, ids["d"])
        assert ctx["ancestry_path"] == f"/{target['id']}/{ids['t']}/{ids['d']}"
    # And back: the entries cached at the new position go too.
    status, body = await move(client, admin, ids["t"], ids["root"])
    assert status == 200, body
    await hear_own_changes(other.app)
    for c in clients:
        ctx = await context(c, admin, ids["e"])
        assert ctx["ancestry_path"] == f"/{ids['root']}/{ids['t']}/{ids['d']}/{ids['e']}"


async def test_archive_and_restore_drop_only_the_tenant(client, other, admin) -> None:
    ids = await tree(client, admin)
    clients = [client, other]
    await hear_own_changes(other.app)
    await warm(clients, admin, list(ids.values()))
    path = f"/api/v1/tenants/{ids['e']}"

    assert (await client.delete(path, headers=admin)).status == 204
    await hear_own_changes(other.app)
    for c in clients:
        assert held(c, ids["e"]) == (False, False)
        for name in ("root", "t", "d", "sibling", "elsewhere"):
            assert held(c, ids[name]) == (True, True), name
        assert (await c.get(path, headers=admin)).status == 410

    assert (await client.post(f"{path}/restore", headers=admin)).status == 200
    await hear_own_changes(other.app)
    for c in clients:
        assert (await get_json(c, path, admin))["status"] == "active"
        assert held(c, ids["d"]) == (True, True)


async def test_a_batch_create_keeps_every_cached_entry(client, other, admin) -> None:
    ids = await tree(client, admin)
    clients = [client, other]
    await hear_own_changes(other.app)
    await warm(clients, admin, list(ids.values()))
    items = [
        {"name": f"T{i}", "slug": unique_slug(), "parent_id": ids["t"], "config": {"k": i}}
        for i in range(10)
    ]
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=admin)
    assert resp.status == 201, await resp.text()
    await hear_own_changes(other.app)
    for c in clients:
        for name, tenant_id in ids.items():
            assert held(c, tenant_id) == (True, True), name


class Gate:
    """Holds a read between its database read and its put()."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    def wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        async def gated(*args: Any, **kwargs: Any) -> Any:
            result = await original(*args, **kwargs)
            self.reached.set()
            await self.release.wait()
            return result

        return gated


@pytest.mark.parametrize("changed", ["t", "elsewhere"])
async def test_a_read_overlapping_a_change_of_its_tenant_is_not_cached(
    client, other, admin, monkeypatch, changed: str
) -> None:
    ids = await tree(client, admin)
    await put_config(client, admin, ids["t"], "plan", "gold", expect=201)
    await put_config(client, admin, ids["elsewhere"], "plan", "gold", expect=201)
    repo = client.app[REPOSITORIES].context
    gate = Gate()
    monkeypatch.setattr(repo, "render_tenant_context", gate.wrap(repo.render_tenant_context))

    read = asyncio.create_task(context(client, admin, ids["e"]))
    await reached([gate.reached], [read])
    # The change commits (through the other instance) and this instance hears it while
    # the read holds rows from before it.
    await put_config(other, admin, ids[changed], "plan", "platinum", expect=200)
    await hear_own_changes(client.app)
    gate.release.set()
    first = await read
    assert first["resolved_config"]["plan"]["value"] == "gold"
    if changed == "t":
        assert not cached(client, "context", ids["e"])
        assert (await context(client, admin, ids["e"]))["resolved_config"]["plan"]["value"] == (
            "platinum"
        )
    else:  # a change elsewhere does not stop this read from being cached
        assert cached(client, "context", ids["e"])


async def test_instances_of_one_app_share_nothing(client, other) -> None:
    app: web.Application = other.app
    assert cache_of(client) is not app[READ_CACHE]
