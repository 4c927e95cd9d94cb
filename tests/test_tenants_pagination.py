"""Keyset pages: walking 250 tenants gives each exactly once, in id order."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import unique_slug


async def create_many(client: TestClient, headers: dict[str, str], count: int) -> list[str]:
    ids: list[str] = []
    while len(ids) < count:
        n = min(100, count - len(ids))
        items = [{"name": f"p{len(ids) + i}", "slug": unique_slug("p")} for i in range(n)]
        resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=headers)
        assert resp.status == 201
        ids += [t["id"] for t in (await resp.json())["created"]]
    return ids


async def walk(
    client: TestClient, headers: dict[str, str], limit: int, extra: str = ""
) -> list[str]:
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = f"limit={limit}{extra}" + (f"&cursor={cursor}" if cursor else "")
        resp = await client.get(f"/api/v1/tenants?{query}", headers=headers)
        page = await resp.json()
        assert resp.status == 200, page
        assert len(page["data"]) <= limit
        seen += [t["id"] for t in page["data"]]
        pages += 1
        assert page["has_more"] == (page["next_cursor"] is not None)
        if not page["has_more"]:
            return seen
        assert page["next_cursor"] == page["data"][-1]["id"]
        cursor = page["next_cursor"]
        assert pages < 1000


async def test_walking_250_tenants_has_no_gap_or_repeat(client: TestClient, admin) -> None:
    ids = await create_many(client, admin, 250)
    for limit in (1, 7, 50, 100):
        seen = await walk(client, admin, limit)
        assert seen == sorted(ids), limit


@pytest.fixture
def settings_env(fresh_db_url: str) -> dict[str, str]:
    return {"DATABASE_URL": fresh_db_url}


async def test_default_page_and_inserts_during_a_walk(client, admin) -> None:
    ids = await create_many(client, admin, 60)
    resp = await client.get("/api/v1/tenants", headers=admin)
    page = await resp.json()
    assert [t["id"] for t in page["data"]] == ids[:50]
    assert (page["has_more"], page["next_cursor"]) == (True, ids[49])
    late = await create_many(client, admin, 3)  # new ids sort after every existing one
    resp = await client.get(
        f"/api/v1/tenants?cursor={page['next_cursor']}&limit=100", headers=admin
    )
    rest = await resp.json()
    assert [t["id"] for t in rest["data"]] == ids[50:] + late
    assert (rest["has_more"], rest["next_cursor"]) == (False, None)
