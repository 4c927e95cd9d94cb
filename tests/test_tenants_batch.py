"""Batch create: all or nothing, every bad item reported with its index."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, unique_slug


async def count_tenants(db_conn) -> int:
    return int(await db_conn.fetchval("SELECT count(*) FROM tenants"))


async def test_batch_creates_all_in_input_order(client: TestClient, admin, db_conn) -> None:
    parent = await create_tenant(client, admin)
    items = [{"name": f"T{i}", "slug": unique_slug(), "parent_id": parent["id"]} for i in range(5)]
    items.append({"name": "Root", "slug": unique_slug(), "metadata": {"k": 1}})
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=admin)
    body = await resp.json()
    assert resp.status == 201, body
    assert body["errors"] == []
    assert [t["slug"] for t in body["created"]] == [i["slug"] for i in items]
    assert [t["depth"] for t in body["created"]] == [1, 1, 1, 1, 1, 0]
    assert body["created"][5]["metadata"] == {"k": 1}
    ids = [t["id"] for t in body["created"]]
    assert ids == sorted(ids)
    events = await db_conn.fetchval(
        "SELECT count(*) FROM events WHERE type = 'tenant.created' AND tenant_id = ANY($1::uuid[])",
        ids,
    )
    audits = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE action = 'tenant.created' "
        "AND tenant_id = ANY($1::uuid[])",
        ids,
    )
    assert (events, audits) == (6, 6)


async def test_one_bad_item_creates_nothing_and_every_bad_item_is_reported(
    client: TestClient, admin, db_conn
) -> None:
    existing = await create_tenant(client, admin)
    archived = await create_tenant(client, admin)
    await client.delete(f"/api/v1/tenants/{archived['id']}", headers=admin)
    dup = unique_slug()
    before = await count_tenants(db_conn)
    items = [
        {"name": "ok", "slug": unique_slug()},
        {"name": "", "slug": unique_slug()},
        {"name": "taken", "slug": existing["slug"]},
        {"name": "dup1", "slug": dup},
        {"name": "dup2", "slug": dup},
        {
            "name": "lost",
            "slug": unique_slug(),
            "parent_id": "01a20214-0000-7000-8000-000000000000",
        },
        {"name": "arch", "slug": unique_slug(), "parent_id": archived["id"]},
        {"name": "extra", "slug": unique_slug(), "colour": "red"},
        {"name": "ok2", "slug": unique_slug()},
    ]
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=admin)
    body = await resp.json()
    assert resp.status == 400
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert body["created"] == []
    assert [(e["index"], e["code"], e.get("field")) for e in body["errors"]] == [
        (1, "VALIDATION_ERROR", "name"),
        (2, "CONFLICT", "slug"),
        (4, "CONFLICT", "slug"),
        (5, "TENANT_NOT_FOUND", "parent_id"),
        (6, "TENANT_ARCHIVED", "parent_id"),
        (7, "VALIDATION_ERROR", "colour"),
    ]
    assert all(e["message"] for e in body["errors"])
    assert await count_tenants(db_conn) == before


async def test_only_conflicts_answer_409(client: TestClient, admin) -> None:
    existing = await create_tenant(client, admin)
    items = [{"name": "a", "slug": unique_slug()}, {"name": "b", "slug": existing["slug"]}]
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=admin)
    body = await resp.json()
    assert resp.status == 409
    assert body["error"]["code"] == "CONFLICT"
    assert body["errors"] == [
        {
            "index": 1,
            "code": "CONFLICT",
            "message": f"a tenant with slug {existing['slug']!r} already exists",
            "field": "slug",
        }
    ]


async def test_batch_size_limits(client: TestClient, admin) -> None:
    for tenants in ([], [{"name": "x", "slug": unique_slug()} for _ in range(101)]):
        resp = await client.post("/api/v1/tenants/batch", json={"tenants": tenants}, headers=admin)
        assert resp.status == 400
        assert (await resp.json())["error"]["details"][0]["field"] == "tenants"
    resp = await client.post("/api/v1/tenants/batch", json={"items": []}, headers=admin)
    assert resp.status == 400
    full = [{"name": "x", "slug": unique_slug()} for _ in range(100)]
    resp = await client.post("/api/v1/tenants/batch", json={"tenants": full}, headers=admin)
    assert resp.status == 201
    assert len((await resp.json())["created"]) == 100
