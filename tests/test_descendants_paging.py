"""Descendants: the whole list streamed as one plain array, or pages with limit and
cursor (X-Next-Cursor and Link); and the bound on whole-subtree reads, which keeps a
burst from one caller from starving everyone else (429/503 with Retry-After for the
excess, 200 for the others)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.http.appkeys import REPOSITORIES
from tests.support.access import as_key, create_key
from tests.support.api import create_tenant, get_json, unique_slug


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {
        "HEAVY_READS_PER_PROCESS": "2",
        "HEAVY_READS_PER_CALLER": "1",
        "HEAVY_READ_WAIT_SECONDS": "0.2",
        # Lists of more than two tenants are heavy, so small trees exercise the bound.
        "HEAVY_READ_ROWS": "2",
        "DB_POOL_MAX_SIZE": "4",
        "DB_ACQUIRE_TIMEOUT_SECONDS": "1",
    }


async def small_tree(client: TestClient, admin: dict[str, str]) -> dict[str, Any]:
    """root -> a -> (a1 -> a11, a2); root -> b -> b1."""
    root = await create_tenant(client, admin)
    a = await create_tenant(client, admin, parent_id=root["id"])
    a1 = await create_tenant(client, admin, parent_id=a["id"])
    a11 = await create_tenant(client, admin, parent_id=a1["id"])
    a2 = await create_tenant(client, admin, parent_id=a["id"])
    b = await create_tenant(client, admin, parent_id=root["id"])
    b1 = await create_tenant(client, admin, parent_id=b["id"])
    return {
        "root": root,
        "below": sorted([a, a1, a11, a2, b, b1], key=lambda t: t["ancestry_path"]),
    }


async def test_the_whole_list_is_one_streamed_array(client, admin) -> None:
    tree = await small_tree(client, admin)
    resp = await client.get(f"/api/v1/tenants/{tree['root']['id']}/descendants", headers=admin)
    assert resp.status == 200
    assert await resp.json() == tree["below"]
    assert resp.headers["Content-Type"] == "application/json"
    assert resp.headers["Transfer-Encoding"] == "chunked"
    assert resp.headers["X-Request-ID"]
    assert "X-RateLimit-Remaining" in resp.headers
    assert "X-Next-Cursor" not in resp.headers
    leaf = tree["below"][2]
    resp = await client.get(f"/api/v1/tenants/{leaf['id']}/descendants", headers=admin)
    assert (resp.status, await resp.json()) == (200, [])


async def test_pages_follow_the_cursor_to_the_end(client, admin) -> None:
    tree = await small_tree(client, admin)
    url = f"/api/v1/tenants/{tree['root']['id']}/descendants"
    pages: list[list[dict[str, Any]]] = []
    params: dict[str, str] = {"limit": "4"}
    while True:
        resp = await client.get(url, headers=admin, params=params)
        assert resp.status == 200, await resp.text()
        pages.append(await resp.json())
        cursor = resp.headers.get("X-Next-Cursor")
        if cursor is None:
            assert "Link" not in resp.headers
            break
        assert cursor == pages[-1][-1]["id"]
        assert resp.headers["Link"] == f'<{url}?limit=4&cursor={cursor}>; rel="next"'
        params = {"limit": "4", "cursor": cursor}
    assert [len(p) for p in pages] == [4, 2]
    assert [t for p in pages for t in p] == tree["below"]
    # Exactly one page: no next.
    resp = await client.get(url, headers=admin, params={"limit": "6"})
    assert (await resp.json(), "X-Next-Cursor" in resp.headers) == (tree["below"], False)
    # A cursor without limit streams the rest.
    rest = await get_json(client, f"{url}?cursor={tree['below'][3]['id']}", admin)
    assert rest == tree["below"][4:]


@pytest.mark.parametrize("query", ["cursor={other}", "cursor={root}", "limit=0", "limit=1001"])
async def test_bad_pages_are_400(client, admin, query: str) -> None:
    tree = await small_tree(client, admin)
    other = await create_tenant(client, admin)
    url = f"/api/v1/tenants/{tree['root']['id']}/descendants?"
    resp = await client.get(
        url + query.format(other=other["id"], root=tree["root"]["id"]), headers=admin
    )
    body = await resp.json()
    assert resp.status == 400, body
    assert body["error"]["code"] == "VALIDATION_ERROR"
    field = query.partition("=")[0]
    assert [d["field"] for d in body["error"]["details"]] == [field]


class Gate:
    """Holds every descendants list that goes on past its first chunk (a heavy list,
    whose slot is then taken and whose answer has begun) until released."""

    def __init__(self) -> None:
        self.calls = 0  # lists read, whether or not they went past their first chunk
        self.entered = 0
        self.changed = asyncio.Event()
        self.release = asyncio.Event()

    def wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        gate = self

        async def gated(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            gate.calls += 1
            chunks = 0
            async for rows in original(*args, **kwargs):
                chunks += 1
                if chunks == 2:
                    gate.entered += 1
                    gate.changed.set()
                    await gate.release.wait()
                yield rows

        return gated

    async def until(self, entered: int) -> None:
        async with asyncio.timeout(30):  # a request that failed first never enters
            while self.entered < entered:
                self.changed.clear()
                await self.changed.wait()


async def test_a_burst_from_one_caller_leaves_other_tenants_answering(
    client, admin, monkeypatch
) -> None:
    tree = await small_tree(client, admin)
    mine = await create_tenant(client, admin)
    await create_tenant(client, admin, parent_id=mine["id"])
    burst = as_key(await create_key(client, admin, scopes=["read"]))
    second = as_key(await create_key(client, admin, scopes=["read"]))
    third = as_key(await create_key(client, admin, scopes=["read"]))
    scoped = as_key(await create_key(client, admin, tenant_id=mine["id"], scopes=["read"]))
    repo = client.app[REPOSITORIES].documents
    gate = Gate()
    monkeypatch.setattr(repo, "stream_descendants_json", gate.wrap(repo.stream_descendants_json))
    url = f"/api/v1/tenants/{tree['root']['id']}/descendants"

    async def whole(headers: dict[str, str]) -> tuple[int, Any, str | None]:
        resp = await client.get(url, headers=headers)
        return resp.status, await resp.json(), resp.headers.get("Retry-After")

    flood = [asyncio.create_task(whole(burst)) for _ in range(8)]
    await gate.until(1)
    other_caller = asyncio.create_task(whole(second))
    await gate.until(2)  # both process slots are held, mid-answer
    # A third caller finds no slot within the wait: 503, Retry-After.
    status, body, retry = await whole(third)
    assert (status, body["error"]["code"], retry) == (503, "SERVICE_UNAVAILABLE", "1")
    # Another tenant's requests keep answering, database reads included.
    for path in ("", "/context", "/children", "/ancestors", "/descendants?limit=10"):
        resp = await client.get(f"/api/v1/tenants/{mine['id']}{path}", headers=scoped)
        assert resp.status == 200, (path, await resp.text())
    gate.release.set()
    results = await asyncio.gather(*flood, other_caller)
    statuses = sorted((status, retry) for status, _, retry in results)
    assert statuses == [(200, None)] * 2 + [(429, "1")] * 7
    for status, body, _ in results:
        if status == 200:
            assert body == tree["below"]
        else:
            assert body["error"]["code"] == "RATE_LIMITED"
    # The slots are free again.
    status, body, _ = await whole(third)
    assert (status, body) == (200, tree["below"])


def test_slots_are_given_back_when_a_stream_fails() -> None:
    from service.http.heavy_reads import HeavyReads

    async def scenario() -> None:
        reads = HeavyReads(per_process=1, per_caller=1, wait_seconds=0.0, threshold_rows=1)
        with pytest.raises(RuntimeError):
            async with reads.slot("a"):
                raise RuntimeError("the stream broke")
        assert reads.running("a") == 0
        async with reads.slot("a"):
            assert reads.running("a") == 1

    asyncio.run(scenario())


async def test_light_lists_take_no_heavy_read_slot(client, admin, monkeypatch) -> None:
    """A whole list of at most HEAVY_READ_ROWS tenants (2 here) fits in its first chunk
    and never asks for a slot: while the caller's only slot is held by a heavy list
    mid-answer, the same caller's light lists and pages all answer 200, and only another
    heavy list of its is refused."""
    tree = await small_tree(client, admin)  # six descendants: heavy
    light = await create_tenant(client, admin)
    below = [await create_tenant(client, admin, parent_id=light["id"]) for _ in range(2)]
    below.sort(key=lambda t: t["ancestry_path"])
    caller = as_key(await create_key(client, admin, scopes=["read"]))
    repo = client.app[REPOSITORIES].documents
    gate = Gate()
    monkeypatch.setattr(repo, "stream_descendants_json", gate.wrap(repo.stream_descendants_json))
    heavy_url = f"/api/v1/tenants/{tree['root']['id']}/descendants"
    light_url = f"/api/v1/tenants/{light['id']}/descendants"

    async def get(url: str, **headers: str) -> tuple[int, Any, str | None]:
        resp = await client.get(url, headers={**caller, **headers})
        return resp.status, await resp.json(), resp.headers.get("Content-Encoding")

    held = asyncio.create_task(get(heavy_url))
    await gate.until(1)  # the caller's one slot is taken, mid-answer
    answers = await asyncio.gather(*(get(light_url) for _ in range(20)))
    assert answers == [(200, below, "gzip")] * 20
    assert await get(light_url, **{"Accept-Encoding": "identity"}) == (200, below, None)
    pages = await asyncio.gather(*(get(f"{heavy_url}?limit=2") for _ in range(5)))
    assert [(status, body) for status, body, _ in pages] == [(200, tree["below"][:2])] * 5
    # Another heavy list of the caller's is refused without rendering any of it (a
    # count capped at the threshold tells it is heavy), light or not known beforehand.
    read = gate.calls
    status, body, _ = await get(heavy_url)
    assert (status, body["error"]["code"]) == (429, "RATE_LIMITED")
    assert gate.calls == read
    gate.release.set()
    assert await held == (200, tree["below"], "gzip")


async def test_a_list_compressed_in_the_executor_is_the_same_list(client, admin) -> None:
    """A chunk of EXECUTOR_BYTES or more is gzipped in the loop's executor, the closing
    bracket inline, through one compressor: gunzipped, the answer is the identity
    answer, byte for byte, in order."""
    from service.http.streaming import EXECUTOR_BYTES

    root = await create_tenant(client, admin)
    items = [
        {"name": f"{i:03} " + "n" * 240, "slug": unique_slug(), "parent_id": root["id"]}
        for i in range(100)
    ]
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=admin)
    assert resp.status == 201, await resp.text()
    url = f"/api/v1/tenants/{root['id']}/descendants"
    # One after the other: a whole descendants list holds the caller's heavy-read slot
    # until its last byte is sent, so a second one started sooner may get 429.
    plain = await client.get(url, headers={**admin, "Accept-Encoding": "identity"})
    body = await plain.read()
    zipped = await client.get(url, headers={**admin, "Accept-Encoding": "gzip"})
    assert (plain.status, zipped.status) == (200, 200)
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert len(body) > EXECUTOR_BYTES
    assert await zipped.read() == body  # the client gunzips
    names = [t["name"][:3] for t in await plain.json()]
    assert sorted(names) == [f"{i:03}" for i in range(100)]
