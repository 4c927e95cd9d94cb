"""A body with several bad fields is answered with every one of them, not only the first
msgspec met, so a form can mark each field at once."""

from __future__ import annotations

from aiohttp.test_utils import TestClient


async def test_every_bad_field_is_named(client: TestClient, admin: dict[str, str]) -> None:
    resp = await client.post(
        "/api/v1/tenants", json={"name": 5, "slug": "Not A Slug", "colour": "red"}, headers=admin
    )
    body = await resp.json()
    assert resp.status == 400
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"] == [
        {"field": "name", "message": "Expected `str`, got `int`"},
        {"field": "slug", "message": "Expected `str` matching regex '^[a-z][a-z0-9_]{0,62}$'"},
        {"field": "colour", "message": "unknown field"},
    ]
    assert body["error"]["message"] == "; ".join(
        f"{d['field']}: {d['message']}" for d in body["error"]["details"]
    )


async def test_a_missing_field_and_a_bad_one(client: TestClient, admin: dict[str, str]) -> None:
    resp = await client.post("/api/v1/api-keys", json={"scopes": ["root"]}, headers=admin)
    body = await resp.json()
    assert resp.status == 400
    fields = [d["field"] for d in body["error"]["details"]]
    assert fields == ["name", "scopes[0]"], body


async def test_one_bad_field_is_answered_as_before(
    client: TestClient, admin: dict[str, str]
) -> None:
    resp = await client.post("/api/v1/tenants", json={"name": "Acme", "slug": 7}, headers=admin)
    body = await resp.json()
    assert (resp.status, body["error"]["message"]) == (400, "slug: Expected `str`, got `int`")
    assert body["error"]["details"] == [{"field": "slug", "message": "Expected `str`, got `int`"}]
