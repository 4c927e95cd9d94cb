"""Tenant endpoints through HTTP: bodies, validation, conflicts, archive and restore."""

from __future__ import annotations

import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_chain, create_tenant, get_json, unique_slug

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def expected_tenant(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The whole tenant body, with generated values taken from the answer itself."""
    assert TIMESTAMP.match(body["created_at"])
    assert TIMESTAMP.match(body["updated_at"])
    return {
        "id": body["id"],
        "parent_id": None,
        "name": "Tenant",
        "slug": body["slug"],
        "ancestry_path": f"/{body['id']}",
        "depth": 0,
        "config": {},
        "metadata": {},
        "isolation_strategy": "SHARED_RLS",
        "region": "default",
        "status": "active",
        "deleted_at": None,
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
        **fields,
    }


async def test_create_root_and_child_answer_whole_bodies(client: TestClient, admin) -> None:
    resp = await client.post(
        "/api/v1/tenants",
        json={
            "name": "Acme Corp",
            "slug": "acme_corp",
            "isolation_strategy": "SCHEMA_PER_TENANT",
            "config": {"theme": "dark", "limits": {"users": 10}},
            "metadata": {"plan": "pro"},
        },
        headers=admin,
    )
    root = await resp.json()
    assert resp.status == 201
    assert resp.headers["Location"] == f"/api/v1/tenants/{root['id']}"
    assert resp.headers["ETag"].startswith('"')
    assert root == expected_tenant(
        root,
        name="Acme Corp",
        slug="acme_corp",
        isolation_strategy="SCHEMA_PER_TENANT",
        config={"theme": "dark", "limits": {"users": 10}},
        metadata={"plan": "pro"},
    )
    assert root["id"][14] == "7", "ids are UUIDv7"
    child = await create_tenant(client, admin, parent_id=root["id"], name="EU")
    assert child == expected_tenant(
        child,
        name="EU",
        parent_id=root["id"],
        ancestry_path=f"/{root['id']}/{child['id']}",
        depth=1,
        isolation_strategy="SCHEMA_PER_TENANT",  # inherited from the parent
    )
    assert child["id"] > root["id"], "id order is creation order"
    fetched = await get_json(client, f"/api/v1/tenants/{child['id']}", admin)
    assert fetched == child


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slug": "no_name"}, "name"),
        ({"name": "", "slug": "empty_name"}, "name"),
        ({"name": "x" * 256, "slug": "long_name"}, "name"),
        ({"name": 5, "slug": "int_name"}, "name"),
        ({"name": "nul\u0000", "slug": "nul_name"}, "name"),
        ({"name": "A"}, "slug"),
        ({"name": "A", "slug": "Upper"}, "slug"),
        ({"name": "A", "slug": "1starts_with_digit"}, "slug"),
        ({"name": "A", "slug": "has-dash"}, "slug"),
        ({"name": "A", "slug": "a" * 64}, "slug"),
        ({"name": "A", "slug": "trailing\n"}, "slug"),
        ({"name": "A", "slug": "bad_parent", "parent_id": "not-a-uuid"}, "parent_id"),
        ({"name": "A", "slug": "bad_iso", "isolation_strategy": "NONE"}, "isolation_strategy"),
        ({"name": "A", "slug": "bad_cfg", "config": {"1bad": 1}}, "config"),
        ({"name": "A", "slug": "null_cfg", "config": {"k": None}}, ""),
        ({"name": "A", "slug": "bad_meta", "metadata": []}, "metadata"),
        ({"name": "A", "slug": "unknown", "color": "red"}, "color"),
        ({"name": "A", "slug": "mass", "depth": 3}, "depth"),
        ({"name": "A", "slug": "mass2", "status": "archived"}, "status"),
    ],
)
async def test_create_validation_errors(
    client: TestClient, admin, body: dict[str, Any], field: str
) -> None:
    resp = await client.post("/api/v1/tenants", json=body, headers=admin)
    data = await resp.json()
    assert resp.status == 400, data
    assert data["error"]["code"] == "VALIDATION_ERROR"
    assert data["error"]["request_id"] == resp.headers["X-Request-ID"]
    [detail] = data["error"]["details"]
    assert detail["field"].startswith(field), detail


async def test_slug_already_taken_is_a_conflict_even_when_archived(client, admin) -> None:
    slug = unique_slug()
    first = await create_tenant(client, admin, slug=slug)
    resp = await client.post("/api/v1/tenants", json={"name": "B", "slug": slug}, headers=admin)
    assert resp.status == 409
    assert (await resp.json())["error"]["code"] == "CONFLICT"
    assert (await client.delete(f"/api/v1/tenants/{first['id']}", headers=admin)).status == 204
    resp = await client.post("/api/v1/tenants", json={"name": "B", "slug": slug}, headers=admin)
    assert resp.status == 409


async def test_missing_or_archived_parent(client, admin) -> None:
    missing = "01a20214-0000-7000-8000-000000000000"
    resp = await client.post(
        "/api/v1/tenants", json={"name": "A", "slug": unique_slug(), "parent_id": missing},
        headers=admin,
    )  # fmt: skip
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "TENANT_NOT_FOUND"
    parent = await create_tenant(client, admin)
    await client.delete(f"/api/v1/tenants/{parent['id']}", headers=admin)
    resp = await client.post(
        "/api/v1/tenants", json={"name": "A", "slug": unique_slug(), "parent_id": parent["id"]},
        headers=admin,
    )  # fmt: skip
    assert resp.status == 410
    assert (await resp.json())["error"]["code"] == "TENANT_ARCHIVED"


async def test_depth_limit(client, admin) -> None:
    chain = await create_chain(client, admin, 33)  # depths 0..32: the deepest allowed is 32
    assert chain[-1]["depth"] == 32
    resp = await client.post(
        "/api/v1/tenants",
        json={"name": "too deep", "slug": unique_slug(), "parent_id": chain[-1]["id"]},
        headers=admin,
    )
    assert resp.status == 409
    assert (await resp.json())["error"]["code"] == "DEPTH_LIMIT_EXCEEDED"


async def test_get_unknown_and_malformed_ids(client, admin) -> None:
    resp = await client.get("/api/v1/tenants/01a20214-0000-7000-8000-000000000000", headers=admin)
    assert resp.status == 404
    body = await resp.json()
    assert body == {
        "error": {
            "code": "TENANT_NOT_FOUND",
            "message": "tenant not found",
            "request_id": resp.headers["X-Request-ID"],
        }
    }
    for bad in ("nope", "01a20214000070008000000000000000", "01a20214-0000-7000-8000-00000000000g"):
        resp = await client.get(f"/api/v1/tenants/{bad}", headers=admin)
        assert resp.status == 400, bad
        body = await resp.json()
        assert body["error"]["code"] == "VALIDATION_ERROR"
        assert [d["field"] for d in body["error"]["details"]] == ["id"]


async def test_patch_fields_metadata_and_config_merge(client, admin) -> None:
    tenant = await create_tenant(
        client, admin, metadata={"a": 1, "nested": {"x": 1, "y": 2}},
        config={"theme": "dark", "limits": {"users": 5, "seats": 2}},
    )  # fmt: skip
    resp = await client.patch(
        f"/api/v1/tenants/{tenant['id']}",
        json={
            "name": "Renamed",
            "metadata": {"a": None, "nested": {"y": None, "z": 3}, "b": True},
            "config": {"theme": None, "limits": {"seats": None, "users": 50}, "new": [1, 2]},
        },
        headers=admin,
    )
    body = await resp.json()
    assert resp.status == 200, body
    assert body["name"] == "Renamed"
    assert body["metadata"] == {"nested": {"x": 1, "z": 3}, "b": True}
    assert body["config"] == {"limits": {"users": 50}, "new": [1, 2]}
    assert body["updated_at"] > tenant["updated_at"]
    assert resp.headers["ETag"] != ""


async def test_patch_rejects_unknown_and_immutable_fields(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    for field, value in (
        ("id", tenant["id"]),
        ("parent_id", None),
        ("depth", 4),
        ("ancestry_path", "/x"),
        ("status", "archived"),
        ("isolation_strategy", "DB_PER_TENANT"),
        ("tenant_id", tenant["id"]),
        ("created_at", "2020-01-01T00:00:00.000Z"),
    ):
        resp = await client.patch(
            f"/api/v1/tenants/{tenant['id']}", json={field: value}, headers=admin
        )
        assert resp.status == 400, field
        assert (await resp.json())["error"]["details"][0]["field"] == field
    assert await get_json(client, f"/api/v1/tenants/{tenant['id']}", admin) == tenant


async def test_patch_slug_conflict_and_null_name(client, admin) -> None:
    a, b = await create_tenant(client, admin), await create_tenant(client, admin)
    resp = await client.patch(f"/api/v1/tenants/{b['id']}", json={"slug": a["slug"]}, headers=admin)
    assert resp.status == 409
    resp = await client.patch(f"/api/v1/tenants/{b['id']}", json={"name": None}, headers=admin)
    assert resp.status == 400


async def test_if_match_guards_patch_move_and_delete(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    resp = await client.get(f"/api/v1/tenants/{tenant['id']}", headers=admin)
    etag = resp.headers["ETag"]
    resp = await client.patch(
        f"/api/v1/tenants/{tenant['id']}", json={"name": "One"},
        headers={**admin, "If-Match": etag},
    )  # fmt: skip
    assert resp.status == 200
    new_etag = resp.headers["ETag"]
    assert new_etag != etag
    stale = {**admin, "If-Match": etag}
    for method, path, body in (
        ("PATCH", "", {"name": "Two"}),
        ("POST", "/move", {"new_parent_id": None}),
        ("DELETE", "", None),
    ):
        resp = await client.request(
            method, f"/api/v1/tenants/{tenant['id']}{path}", json=body, headers=stale
        )
        assert resp.status == 412, (method, path)
        assert (await resp.json())["error"]["code"] == "PRECONDITION_FAILED"
    resp = await client.delete(
        f"/api/v1/tenants/{tenant['id']}", headers={**admin, "If-Match": new_etag}
    )
    assert resp.status == 204


async def test_get_tenant_answers_304_when_the_copy_is_current(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    url = f"/api/v1/tenants/{tenant['id']}"
    resp = await client.get(url, headers=admin)
    etag = resp.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)
    # Every answer about the tenant carries the same tag for the same document.
    assert etag == (await client.get(url, headers=admin)).headers["ETag"]
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        resp = await client.get(url, headers={**admin, "If-None-Match": header})
        assert resp.status == 304, header
        assert resp.headers["ETag"] == etag
        assert await resp.read() == b""
    resp = await client.get(url, headers={**admin, "If-None-Match": '"stale"'})
    assert (resp.status, await resp.json()) == (200, tenant)

    # A write answers with the document (and its new tag), never 304.
    resp = await client.patch(
        url, json={"name": "Renamed"}, headers={**admin, "If-None-Match": etag}
    )
    assert resp.status == 200
    renamed = await resp.json()
    assert renamed == {**tenant, "name": "Renamed", "updated_at": renamed["updated_at"]}
    new_etag = resp.headers["ETag"]
    assert new_etag != etag
    resp = await client.get(url, headers={**admin, "If-None-Match": etag})
    assert (resp.status, resp.headers["ETag"]) == (200, new_etag)
    resp = await client.get(url, headers={**admin, "If-None-Match": new_etag})
    assert resp.status == 304


async def test_archive_rules(client, admin) -> None:
    parent = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=parent["id"])
    resp = await client.delete(f"/api/v1/tenants/{parent['id']}", headers=admin)
    assert resp.status == 409
    assert (await resp.json())["error"]["code"] == "HAS_CHILDREN"
    assert (await client.delete(f"/api/v1/tenants/{child['id']}", headers=admin)).status == 204
    assert (await client.delete(f"/api/v1/tenants/{parent['id']}", headers=admin)).status == 204

    archived = parent["id"]
    for method, path, body in (
        ("GET", "", None),
        ("PATCH", "", {"name": "x"}),
        ("DELETE", "", None),
        ("POST", "/move", {"new_parent_id": None}),
        ("GET", "/ancestors", None),
        ("GET", "/descendants", None),
        ("GET", "/children", None),
    ):
        resp = await client.request(
            method, f"/api/v1/tenants/{archived}{path}", json=body, headers=admin
        )
        assert resp.status == 410, (method, path)
        assert (await resp.json())["error"]["code"] == "TENANT_ARCHIVED"
    other = await create_tenant(client, admin)
    status = (
        await client.post(
            f"/api/v1/tenants/{other['id']}/move", json={"new_parent_id": archived}, headers=admin
        )
    ).status
    assert status == 410

    shown = await get_json(client, f"/api/v1/tenants/{archived}?include_archived=true", admin)
    assert shown["status"] == "archived"
    assert TIMESTAMP.match(shown["deleted_at"])


async def test_restore_rules(client, admin) -> None:
    parent = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=parent["id"])
    await client.delete(f"/api/v1/tenants/{child['id']}", headers=admin)
    await client.delete(f"/api/v1/tenants/{parent['id']}", headers=admin)
    resp = await client.post(f"/api/v1/tenants/{child['id']}/restore", headers=admin)
    assert resp.status == 409
    assert (await resp.json())["error"]["code"] == "PARENT_ARCHIVED"
    resp = await client.post(f"/api/v1/tenants/{parent['id']}/restore", headers=admin)
    restored = await resp.json()
    assert resp.status == 200
    assert (restored["status"], restored["deleted_at"]) == ("active", None)
    resp = await client.post(f"/api/v1/tenants/{child['id']}/restore", headers=admin)
    assert resp.status == 200
    again = await client.post(f"/api/v1/tenants/{child['id']}/restore", headers=admin)
    assert again.status == 200, "restoring an active tenant is a no-op"


async def test_list_filters(client, admin) -> None:
    parent = await create_tenant(client, admin)
    kids = [await create_tenant(client, admin, parent_id=parent["id"]) for _ in range(3)]
    await client.delete(f"/api/v1/tenants/{kids[0]['id']}", headers=admin)
    active = await get_json(client, f"/api/v1/tenants?parent_id={parent['id']}", admin)
    assert [t["id"] for t in active["data"]] == [k["id"] for k in kids[1:]]
    assert (active["next_cursor"], active["has_more"]) == (None, False)
    archived = await get_json(
        client, f"/api/v1/tenants?parent_id={parent['id']}&status=archived", admin
    )
    assert [t["id"] for t in archived["data"]] == [kids[0]["id"]]
    everything = await get_json(
        client, f"/api/v1/tenants?parent_id={parent['id']}&status=all", admin
    )
    assert len(everything["data"]) == 3
    by_slug = await get_json(client, f"/api/v1/tenants?slug={kids[1]['slug']}", admin)
    assert [t["id"] for t in by_slug["data"]] == [kids[1]["id"]]
    for query in ("limit=0", "limit=101", "limit=x", "status=gone", "cursor=nope", "color=red",
                  "limit=5&limit=6"):  # fmt: skip
        resp = await client.get(f"/api/v1/tenants?{query}", headers=admin)
        assert resp.status == 400, query


async def test_get_tenant_answers_304_to_a_matching_if_none_match(client, admin) -> None:
    tenant = await create_tenant(client, admin, name="Conditional")
    url = f"/api/v1/tenants/{tenant['id']}"
    resp = await client.get(url, headers=admin)
    assert resp.status == 200
    assert await resp.json() == tenant
    etag = resp.headers["ETag"]
    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        resp = await client.get(url, headers={**admin, "If-None-Match": header})
        assert resp.status == 304, header
        assert resp.headers["ETag"] == etag
        assert await resp.read() == b""
    resp = await client.get(url, headers={**admin, "If-None-Match": '"stale"'})
    assert resp.status == 200
    assert await resp.json() == tenant

    # A change makes the client's copy stale; access and archived state come first.
    resp = await client.patch(url, json={"name": "Changed"}, headers=admin)
    assert resp.status == 200
    resp = await client.get(url, headers={**admin, "If-None-Match": etag})
    assert resp.status == 200
    assert (await resp.json())["name"] == "Changed"
    new_etag = resp.headers["ETag"]
    assert (await client.delete(url, headers=admin)).status == 204
    resp = await client.get(url, headers={**admin, "If-None-Match": new_etag})
    assert resp.status == 410
