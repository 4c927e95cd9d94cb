"""Hydration (every context of a subtree with its revision; the stream continues
exactly from it, writes running meanwhile) and batch reads of named tenants."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from service.http.appkeys import DATABASE
from tests.support.api import create_tenant, get_json
from tests.support.entries import put_config
from tests.support.keys import key_headers
from tests.support.sse import open_stream
from tests.test_context_stream import apply, hydrate, reached, truth


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    return fresh_db_url


async def _tree(client: Any, admin: dict[str, str]) -> dict[str, str]:
    ids: dict[str, str] = {}
    ids["R"] = (await create_tenant(client, admin))["id"]
    for name, parent in (("A", "R"), ("B", "R"), ("A1", "A"), ("A2", "A")):
        ids[name] = (await create_tenant(client, admin, parent_id=ids[parent]))["id"]
    ids["X"] = (await create_tenant(client, admin))["id"]
    await put_config(client, admin, ids["R"], "theme", "light", expect=201)
    await put_config(client, admin, ids["A"], "secret", "s", sensitive=True, expect=201)
    return ids


async def test_hydration_lists_every_context_of_the_subtree_in_pre_order(client, admin) -> None:
    ids = await _tree(client, admin)
    await client.delete(f"/api/v1/tenants/{ids['B']}", headers=admin)  # archived: left out
    resp = await client.get(f"/api/v1/tenants/{ids['A']}/contexts", headers=admin)
    assert resp.status == 200
    body = await resp.json()
    order = [ids["A"], ids["A1"], ids["A2"]]
    order[1:] = sorted(order[1:], key=lambda t: f"/{ids['R']}/{ids['A']}/{t}")
    assert body == [await get_json(client, f"/api/v1/tenants/{t}/context", admin) for t in order]
    assert body[1]["resolved_config"]["secret"]["value"] == "***"
    revision = int(resp.headers["X-Revision"])
    async with client.app[DATABASE].connection() as conn:
        assert revision == await conn.fetchval("SELECT max(revision) FROM context_revisions")
    # A scoped key: its own subtree only.
    scoped = await key_headers(client.app, ("read",), tenant_id=ids["A"])
    resp = await client.get(f"/api/v1/tenants/{ids['A']}/contexts", headers=scoped)
    assert (resp.status, len(await resp.json())) == (200, 3)
    resp = await client.get(f"/api/v1/tenants/{ids['R']}/contexts", headers=scoped)
    assert (resp.status, (await resp.json())["error"]["code"]) == (404, "TENANT_NOT_FOUND")


async def test_hydration_and_the_stream_continue_exactly_while_writes_run(client, admin) -> None:
    """Writers change the subtree while it is hydrated: hydration's X-Revision is its
    snapshot, so the stream from it brings the cache to GET /context exactly."""
    ids = await _tree(client, admin)
    root = ids["R"]
    stop = asyncio.Event()
    started, enough = asyncio.Event(), asyncio.Event()
    writes = 0

    async def writer(tenant: str) -> None:
        nonlocal writes
        n = 0
        while not stop.is_set():
            n += 1
            await put_config(client, admin, tenant, "counter", n)
            writes += 1
            if writes >= 5:
                started.set()
            if writes >= 30:
                enough.set()

    tasks = [asyncio.create_task(writer(ids[k])) for k in ("R", "A1", "B")]
    try:
        await asyncio.wait_for(started.wait(), 10)
        revision, cache = await hydrate(client, root, admin)
        await asyncio.wait_for(enough.wait(), 10)
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    last = int(
        (
            await client.put(
                f"/api/v1/tenants/{root}/config/sentinel", json={"value": 1}, headers=admin
            )
        ).headers["X-Revision"]
    )
    want = await truth(client, root, admin)
    stream = await open_stream(client, root, admin, since=revision)
    try:
        apply(cache, await stream.until(reached(root, last, len(want))))
    finally:
        stream.close()
    assert cache == want


async def test_batch_reads_named_contexts_and_lists_the_rest(client, admin) -> None:
    ids = await _tree(client, admin)
    await client.delete(f"/api/v1/tenants/{ids['B']}", headers=admin)
    unknown = str(uuid.uuid4())
    asked = [ids["A1"], unknown, ids["R"], ids["A1"], ids["B"], ids["X"]]
    resp = await client.post("/api/v1/contexts/batch", json={"tenant_ids": asked}, headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    want = [await get_json(client, f"/api/v1/tenants/{t}/context", admin) for t in
            (ids["A1"], ids["R"], ids["X"])]  # fmt: skip
    assert body == {"contexts": want, "not_found": [unknown, ids["B"]]}
    async with client.app[DATABASE].connection() as conn:
        current = await conn.fetchval("SELECT max(revision) FROM context_revisions")
    assert int(resp.headers["X-Revision"]) == current
    # A scoped key: what lies outside its subtree is not found.
    scoped = await key_headers(client.app, ("read",), tenant_id=ids["A"])
    resp = await client.post("/api/v1/contexts/batch", json={"tenant_ids": asked}, headers=scoped)
    body = await resp.json()
    assert [c["tenant_id"] for c in body["contexts"]] == [ids["A1"]]
    assert body["not_found"] == [unknown, ids["R"], ids["B"], ids["X"]]


async def test_batch_bodies_are_checked(client, admin) -> None:
    for body in (
        {"tenant_ids": []},
        {"tenant_ids": [str(uuid.uuid4()) for _ in range(1001)]},
        {"tenant_ids": ["nope"]},
        {"tenant_ids": [str(uuid.uuid4())], "extra": 1},
        {},
    ):
        resp = await client.post("/api/v1/contexts/batch", json=body, headers=admin)
        assert (resp.status, (await resp.json())["error"]["code"]) == (400, "VALIDATION_ERROR")
    resp = await client.post(
        "/api/v1/contexts/batch", json={"tenant_ids": [str(uuid.uuid4()) for _ in range(1000)]},
        headers=admin,
    )  # fmt: skip
    assert resp.status == 200
    assert len((await resp.json())["not_found"]) == 1000
