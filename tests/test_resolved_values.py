"""GET /tenants/{id}/resolved?key=K: who resolves to what, checked against a brute-force
computation from GET /context of every tenant, with every filter, paged and streamed,
masked as /context masks, and scoped keys limited to their subtree."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any
from urllib.parse import quote

import orjson
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json
from tests.support.keys import make_key

H = dict[str, str]


async def put(client: TestClient, h: H, tenant: str, key: str, value: Any, **kw: Any) -> None:
    resp = await client.put(f"/api/v1/tenants/{tenant}/config/{key}",
                            json={"value": value, **kw}, headers=h)  # fmt: skip
    assert resp.status in (200, 201), await resp.json()


async def build(client: TestClient, h: H) -> dict[str, Any]:
    """root > a, b, c; each with two children; a's first child with two more; archived d."""
    root = await create_tenant(client, h, config={"plan": "free"})
    tenants = {"root": root}
    for name in ("a", "b", "c"):
        tenants[name] = await create_tenant(client, h, parent_id=root["id"])
        for i in (1, 2):
            tenants[f"{name}{i}"] = await create_tenant(client, h, parent_id=tenants[name]["id"])
    for i in (1, 2):
        tenants[f"a1{i}"] = await create_tenant(client, h, parent_id=tenants["a1"]["id"])
    tenants["d"] = await create_tenant(client, h, parent_id=root["id"], config={"plan": "x"})
    assert (await client.delete(f"/api/v1/tenants/{tenants['d']['id']}", headers=h)).status == 204
    ids = {k: v["id"] for k, v in tenants.items()}
    await put(client, h, ids["a"], "plan", "pro")
    await put(client, h, ids["a11"], "plan", "eu")
    await put(client, h, ids["b1"], "plan", "eu")  # shadowed by b's lock, set below
    await put(client, h, ids["b"], "plan", "pro", locked=True)
    await put(client, h, ids["c1"], "plan", {"tier": "gold", "seats": 3})
    await put(client, h, ids["c2"], "plan", "secret-plan", sensitive=True)
    await put(client, h, ids["a2"], "other", 1)
    # A key with no value at the root: only some tenants resolve it.
    await put(client, h, ids["a1"], "region", "eu")
    await put(client, h, ids["b"], "region", "us", locked=True)
    return ids


async def brute_force(client: TestClient, h: H, top: str, key: str) -> list[dict[str, Any]]:
    subtree = await get_json(client, f"/api/v1/tenants/{top}/descendants", h)
    rows = []
    for tenant in [await get_json(client, f"/api/v1/tenants/{top}", h), *subtree]:
        ctx = await get_json(client, f"/api/v1/tenants/{tenant['id']}/context", h)
        entry = ctx["resolved_config"].get(key)
        if entry is None:
            continue
        rows.append(
            (
                ctx["ancestry_path"],
                {
                    "tenant_id": tenant["id"],
                    "key": key,
                    "value": entry["value"],
                    "source_tenant_id": entry["source_tenant_id"],
                    "inherited": entry["inherited"],
                    "locked": entry["locked"],
                },
            )
        )
    return [row for _, row in sorted(rows, key=lambda r: r[0])]


def same(a: Any, b: Any) -> bool:
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        b, option=orjson.OPT_SORT_KEYS
    )


async def test_every_filter_matches_the_brute_force(client: TestClient, admin: H) -> None:
    ids = await build(client, admin)
    for key, top in itertools.product(("plan", "region", "other", "none"), ("root", "a", "b")):
        expected = await brute_force(client, admin, ids[top], key)
        base = f"/api/v1/tenants/{ids[top]}/resolved?key={key}"
        assert await get_json(client, base, admin) == expected, (key, top)
        values = [None, *{json.dumps(r["value"], sort_keys=True) for r in expected}, '"nope"']
        sources = [None, *{r["source_tenant_id"] for r in expected}, ids["c"]]
        for value, source, inherited, locked in itertools.product(
            values, sources, (None, True, False), (None, True, False)
        ):
            query, want = base, expected
            if value is not None:
                query += f"&value={quote(value)}"
                want = [r for r in want if same(r["value"], json.loads(value))]
            if source is not None:
                query += f"&source_tenant_id={source}"
                want = [r for r in want if r["source_tenant_id"] == source]
            if inherited is not None:
                query += f"&inherited={str(inherited).lower()}"
                want = [r for r in want if r["inherited"] is inherited]
            if locked is not None:
                query += f"&locked={str(locked).lower()}"
                want = [r for r in want if r["locked"] is locked]
            assert await get_json(client, query, admin) == want, query
    # The shapes the data was built for: b's lock wins over b1's own value, the secret
    # is masked, the archived tenant is left out.
    plan = await get_json(client, f"/api/v1/tenants/{ids['root']}/resolved?key=plan", admin)
    by_id = {r["tenant_id"]: r for r in plan}
    assert by_id[ids["b1"]]["source_tenant_id"] == ids["b"]
    assert by_id[ids["c2"]]["value"] == "***"
    assert ids["d"] not in by_id
    assert len(plan) == 12  # every active tenant: the root has a value


async def test_pages_follow_the_stream(client: TestClient, admin: H) -> None:
    ids = await build(client, admin)
    path = f"/api/v1/tenants/{ids['root']}/resolved?key=plan"
    whole = await get_json(client, path, admin)
    for limit in (1, 2, 5, 13, 100):
        got: list[Any] = []
        cursor = None
        while True:
            url = path + f"&limit={limit}" + (f"&cursor={cursor}" if cursor else "")
            resp = await client.get(url, headers=admin)
            assert resp.status == 200
            got += await resp.json()
            cursor = resp.headers.get("X-Next-Cursor")
            if cursor is None:
                assert "Link" not in resp.headers
                break
            assert cursor == got[-1]["tenant_id"]
        assert got == whole, limit
    outside = await create_tenant(client, admin)
    body = await get_json(client, path + f"&cursor={outside['id']}", admin, expect=400)
    assert body["error"]["details"][0]["field"] == "cursor"
    for bad in ("value=pro", "value=null", "key=no%20key", "locked=maybe"):
        query = f"/api/v1/tenants/{ids['root']}/resolved?{bad}"
        if not bad.startswith("key="):
            query += "&key=plan"
        assert (await client.get(query, headers=admin)).status == 400, bad


async def test_scoped_keys_see_only_their_subtree(client: TestClient, admin: H) -> None:
    ids = await build(client, admin)
    issued = await make_key(client.app, ("read",), tenant_id=ids["a"])
    scoped = {"X-API-Key": issued.plaintext}
    body = await get_json(client, f"/api/v1/tenants/{ids['root']}/resolved?key=plan", scoped,
                          expect=404)  # fmt: skip
    assert body["error"]["code"] == "TENANT_NOT_FOUND"
    await get_json(client, f"/api/v1/tenants/{ids['b']}/resolved?key=plan", scoped, expect=404)
    mine = await get_json(client, f"/api/v1/tenants/{ids['a']}/resolved?key=plan", scoped)
    assert mine == await brute_force(client, scoped, ids["a"], "plan")
    assert {r["tenant_id"] for r in mine} == {ids[n] for n in ("a", "a1", "a2", "a11", "a12")}
    # A secret set below a scoped caller is masked for it as GET /context masks it.
    await put(client, admin, ids["a2"], "plan", "hidden", sensitive=True)
    mine = await get_json(client, f"/api/v1/tenants/{ids['a']}/resolved?key=plan", scoped)
    assert {r["tenant_id"]: r["value"] for r in mine}[ids["a2"]] == "***"
    assert mine == await brute_force(client, scoped, ids["a"], "plan")


async def test_a_random_forest_matches_the_brute_force(client: TestClient, admin: H) -> None:
    rng = random.Random(33)
    top = await create_tenant(client, admin)
    ids = [top["id"]]
    for _ in range(30):
        ids.append((await create_tenant(client, admin, parent_id=rng.choice(ids)))["id"])
    for tenant in rng.sample(ids, 12):
        value = rng.choice(["a", "b", {"n": 1}, 2])
        await put(client, admin, tenant, "k", value, sensitive=rng.random() < 0.2)
    for tenant in rng.sample(ids, 4):  # refused under an ancestor's lock: that is fine
        await client.put(f"/api/v1/tenants/{tenant}/config/k",
                         json={"value": "locked", "locked": True}, headers=admin)  # fmt: skip
    for start in [*rng.sample(ids, 4), top["id"]]:
        expected = await brute_force(client, admin, start, "k")
        base = f"/api/v1/tenants/{start}/resolved?key=k"
        assert await get_json(client, base, admin) == expected
        got: list[Any] = []
        cursor = None
        while True:
            resp = await client.get(
                base + "&limit=3" + (f"&cursor={cursor}" if cursor else ""), headers=admin
            )
            got += await resp.json()
            cursor = resp.headers.get("X-Next-Cursor")
            if cursor is None:
                break
        assert got == expected
        for value in ('"a"', '"locked"', '{"n": 1.0}', "2"):
            want = [r for r in expected if same(r["value"], json.loads(value))]
            if value == '{"n": 1.0}':
                want = [r for r in expected if r["value"] == {"n": 1}]
            assert await get_json(client, base + f"&value={quote(value)}", admin) == want
