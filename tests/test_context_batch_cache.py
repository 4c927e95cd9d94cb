"""Batch context reads answered from the read cache: the same body as one snapshot of the
database, without touching the database once warm; X-Revision a revision that every
context of the answer reflects at least, also while another process writes; the
caller's scope and archives checked on cached entries; and the revision a listener
starts from when it connects."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.caches.read_cache import ReadCache
from service.http.appkeys import AUTHENTICATOR, DATABASE, READ_CACHE
from service.settings.options import Settings
from tests.support.api import create_tenant
from tests.support.entries import put_config
from tests.support.keys import key_headers

BATCH = "/api/v1/contexts/batch"


@pytest.fixture
async def other(settings: Settings, aiohttp_client: Any) -> TestClient:
    """A second instance of the service on the same database (another process)."""
    result: TestClient = await aiohttp_client(create_app(settings))
    return result


def cache_of(client: TestClient) -> ReadCache:
    return client.app[READ_CACHE]


async def current_revision(client: TestClient) -> int:
    async with client.app[DATABASE].connection() as conn:
        found: int = await conn.fetchval("SELECT coalesce(max(revision), 0) FROM context_revisions")
    return found


async def heard_all(client: TestClient) -> int:
    """Until this process's listener has heard the newest committed revision."""
    current = await current_revision(client)
    async with asyncio.timeout(10):
        await cache_of(client).wait_revision(current)
    return current


async def batch(
    client: TestClient, headers: dict[str, str], ids: list[str]
) -> tuple[int, dict[str, Any]]:
    resp = await client.post(BATCH, json={"tenant_ids": ids}, headers=headers)
    body = await resp.json()
    assert resp.status == 200, body
    return int(resp.headers["X-Revision"]), body


async def tree(client: TestClient, headers: dict[str, str]) -> dict[str, str]:
    """R -> A -> (A1, A2); R -> B; with a value on R and a secret on A."""
    ids = {"R": (await create_tenant(client, headers))["id"]}
    for name, parent in (("A", "R"), ("B", "R"), ("A1", "A"), ("A2", "A")):
        ids[name] = (await create_tenant(client, headers, parent_id=ids[parent]))["id"]
    await put_config(client, headers, ids["R"], "theme", "light", expect=201)
    await put_config(client, headers, ids["A"], "secret", "s", sensitive=True, expect=201)
    return ids


async def test_a_warm_batch_is_the_snapshot_body_without_the_database(
    client, admin, db_conn
) -> None:
    ids = await tree(client, admin)
    unknown = str(uuid.uuid4())
    asked = [ids["A1"], unknown, ids["R"], ids["A2"], ids["A1"]]
    current = await heard_all(client)
    cold = await batch(client, admin, asked)
    assert cold[0] == current
    assert [c["tenant_id"] for c in cold[1]["contexts"]] == [ids["A1"], ids["R"], ids["A2"]]
    assert cold[1]["not_found"] == [unknown]
    held = cache_of(client).held("context", [uuid.UUID(ids[n]) for n in ("A1", "R", "A2")])
    assert held is not None
    assert len(held[1]) == 3
    # Warm: the answer needs no database. Another session holds the tenants table
    # exclusively, and the batch of cached tenants is answered all the same (an unknown
    # id is looked up every time).
    known = [t for t in asked if t != unknown]
    async with db_conn.transaction():
        await db_conn.execute("LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE")
        async with asyncio.timeout(10):
            warm = await batch(client, admin, known)
    assert warm == (current, {"contexts": cold[1]["contexts"], "not_found": []})
    assert await batch(client, admin, asked) == cold
    # The same batch from one snapshot (the cache off) is the same answer.
    cache_of(client).disable()
    assert await batch(client, admin, asked) == cold


async def test_cached_entries_are_checked_for_scope_archive_and_change(client, admin) -> None:
    ids = await tree(client, admin)
    everyone = [ids[n] for n in ("R", "A", "B", "A1", "A2")]
    await batch(client, admin, everyone)  # all of them cached now
    scoped = await key_headers(client.app, ("read",), tenant_id=ids["A"])
    _, body = await batch(client, scoped, everyone)
    assert [c["tenant_id"] for c in body["contexts"]] == [ids["A"], ids["A1"], ids["A2"]]
    assert body["not_found"] == [ids["R"], ids["B"]]
    resp = await client.delete(f"/api/v1/tenants/{ids['A2']}", headers=admin)
    assert resp.status == 204, await resp.text()
    await put_config(client, admin, ids["A"], "theme", "dark", expect=201)
    revision, body = await batch(client, admin, everyone)
    assert body["not_found"] == [ids["A2"]]
    themes = {c["tenant_id"]: c["resolved_config"]["theme"]["value"] for c in body["contexts"]}
    assert themes == {ids["R"]: "light", ids["A"]: "dark", ids["B"]: "light", ids["A1"]: "dark"}
    assert revision <= await current_revision(client)


async def test_every_context_reflects_at_least_the_answer_revision_while_another_process_writes(
    client, other, admin
) -> None:
    """`other` writes n = 1, 2, ... on A; this process answers batches of A and its child
    from its cache meanwhile, hearing the writes only through its listener. A batch that
    says revision r shows, for both, at least the last n written at or before r."""
    root = (await create_tenant(client, admin))["id"]
    a = (await create_tenant(client, admin, parent_id=root))["id"]
    child = (await create_tenant(client, admin, parent_id=a))["id"]
    written: list[tuple[int, int]] = []  # (X-Revision of the write's answer, n)
    answers: list[list[tuple[int, int, int]]] = [[], []]
    done = asyncio.Event()

    async def write() -> None:
        try:
            for n in range(1, 41):
                resp = await other.put(
                    f"/api/v1/tenants/{a}/config/n", json={"value": n}, headers=admin
                )
                assert resp.status in (200, 201), await resp.text()
                written.append((int(resp.headers["X-Revision"]), n))
        finally:
            done.set()

    def value(context: dict[str, Any]) -> int:
        entry = context["resolved_config"].get("n")
        return 0 if entry is None else int(entry["value"])

    async def read(seen: list[tuple[int, int, int]]) -> None:
        while not done.is_set():
            revision, body = await batch(client, admin, [a, child])
            by_id = {c["tenant_id"]: value(c) for c in body["contexts"]}
            seen.append((revision, by_id[a], by_id[child]))

    await asyncio.gather(write(), read(answers[0]), read(answers[1]))
    assert len(written) == 40
    for seen in answers:
        assert seen, "a reader answered nothing"
        assert [r for r, _, _ in seen] == sorted(r for r, _, _ in seen)
        for revision, n_a, n_child in seen:
            floor = max((n for w, n in written if w <= revision), default=0)
            assert min(n_a, n_child) >= floor, (revision, n_a, n_child, written)
    # Once this process has heard every write, its answer is the writer's, at the newest.
    current = await heard_all(client)
    assert await batch(client, admin, [a, child]) == (
        current,
        (await batch(other, admin, [a, child]))[1],
    )


async def test_a_listener_starts_from_the_newest_revision(
    client, admin, settings, aiohttp_client
) -> None:
    ids = await tree(client, admin)
    current = await current_revision(client)
    assert current > 0
    late: TestClient = await aiohttp_client(create_app(settings))
    listener = late.app[AUTHENTICATOR].listener
    assert listener is not None
    async with asyncio.timeout(10):
        await listener.connected.wait()
    # Nothing was written since it connected: the revision it starts from is read.
    assert cache_of(late).revision == current
    revision, _ = await batch(late, admin, [ids["A1"]])
    assert revision == current
