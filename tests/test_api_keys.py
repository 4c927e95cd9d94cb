"""API-key endpoints through HTTP: create, list, get, patch, revoke, rotate, dormant."""

from __future__ import annotations

import asyncio
import base64
import os
from datetime import UTC, datetime, timedelta

import pytest

from service.auth.keys import parse_key
from service.http.appkeys import SETTINGS
from tests.support.access import as_key, call, create_key, error_code
from tests.support.api import create_tenant

KEY_FIELDS = {
    "id", "tenant_id", "name", "prefix", "environment", "scopes", "role_id",
    "effective_scopes", "rate_limit_max", "rate_limit_window", "status", "created_at",
    "last_used_at", "expires_at", "revoked_at", "rotated_from",
}  # fmt: skip


def iso_in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def test_create_defaults_and_shape(client, admin) -> None:
    resp = await client.post("/api/v1/api-keys", json={"name": "ci"}, headers=admin)
    body = await resp.json()
    assert resp.status == 201, body
    assert resp.headers["Location"] == f"/api/v1/api-keys/{body['id']}"
    assert resp.headers["Cache-Control"] == "no-store"
    plaintext = body.pop("plaintext_key")
    assert set(body) == KEY_FIELDS
    # Outside production a key defaults to the test environment (docs/decisions.md).
    assert parse_key(plaintext) == "test"
    assert plaintext.startswith("sk_test_")
    assert body["prefix"] == plaintext[:12]
    assert body | {"id": None, "created_at": None} == {
        "id": None, "tenant_id": None, "name": "ci", "prefix": plaintext[:12],
        "environment": "test", "scopes": ["read"], "role_id": None,
        "effective_scopes": ["read"], "rate_limit_max": None, "rate_limit_window": None,
        "status": "active", "created_at": None, "last_used_at": None, "expires_at": None,
        "revoked_at": None, "rotated_from": None,
    }  # fmt: skip
    # The new key works at once with the scopes it was given.
    status, _ = await call(client, "GET", "/api/v1/tenants", {"X-API-Key": plaintext})
    assert status == 200
    status, body = await call(client, "POST", "/api/v1/tenants", {"X-API-Key": plaintext}, {})
    assert status == 403
    assert error_code(body) == "INSUFFICIENT_SCOPE"


async def test_create_with_every_option(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    expires = iso_in(3600)
    body = await create_key(
        client, admin, name="full", tenant_id=tenant["id"], scopes=["write", "read", "read"],
        environment="test", rate_limit_max=500, rate_limit_window="30 seconds",
        expires_at=expires,
    )  # fmt: skip
    assert body["plaintext_key"].startswith("sk_test_")
    assert body["tenant_id"] == tenant["id"]
    assert body["scopes"] == ["read", "write"]
    assert body["rate_limit_max"] == 500
    assert body["rate_limit_window"] == "30 seconds"
    assert datetime.fromisoformat(body["expires_at"]) == datetime.fromisoformat(expires).replace(
        microsecond=datetime.fromisoformat(expires).microsecond // 1000 * 1000
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "rate_limit_window": "5 fortnights"}, "rate_limit_window"),
        ({"name": "x", "rate_limit_window": "0"}, "rate_limit_window"),
        ({"name": "x", "rate_limit_window": "2 days"}, "rate_limit_window"),
        ({"name": "x", "rate_limit_max": 0}, "rate_limit_max"),
        ({"name": "x", "rate_limit_max": 100_001}, "rate_limit_max"),
        ({"name": "x", "scopes": ["root"]}, "scopes[0]"),
        ({"name": "x", "scopes": []}, "scopes"),
        ({"name": ""}, "name"),
        ({"name": "x", "environment": "prod"}, "environment"),
        ({"name": "x", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "x", "expires_at": "2999-01-01T00:00:00"}, "expires_at"),
        ({"name": "x", "plaintext_key": "sk_live_x"}, "plaintext_key"),
        ({"scopes": ["read"]}, "name"),
    ],
)
async def test_create_rejects_bad_input(client, admin, body, field) -> None:
    status, data = await call(client, "POST", "/api/v1/api-keys", admin, body)
    assert status == 400, data
    assert error_code(data) == "VALIDATION_ERROR"
    assert data["error"]["details"][0]["field"] == field


async def test_create_for_unknown_tenant_or_role(client, admin) -> None:
    missing = "00000000-0000-7000-8000-000000000000"
    status, data = await call(
        client, "POST", "/api/v1/api-keys", admin, {"name": "x", "tenant_id": missing}
    )
    assert (status, error_code(data)) == (404, "TENANT_NOT_FOUND")
    status, data = await call(
        client, "POST", "/api/v1/api-keys", admin, {"name": "x", "role_id": missing}
    )
    assert (status, error_code(data)) == (404, "ROLE_NOT_FOUND")


async def test_create_for_archived_tenant_is_410(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    status, _ = await call(client, "DELETE", f"/api/v1/tenants/{tenant['id']}", admin)
    assert status == 204
    status, data = await call(
        client, "POST", "/api/v1/api-keys", admin, {"name": "x", "tenant_id": tenant["id"]}
    )
    assert (status, error_code(data)) == (410, "TENANT_ARCHIVED")


async def test_get_never_shows_the_key_text(client, admin) -> None:
    created = await create_key(client, admin, scopes=["read", "write"])
    status, body = await call(client, "GET", f"/api/v1/api-keys/{created['id']}", admin)
    assert status == 200
    assert body == {k: v for k, v in created.items() if k != "plaintext_key"}
    status, body = await call(client, "GET", "/api/v1/api-keys/not-a-uuid", admin)
    assert (status, error_code(body)) == (400, "VALIDATION_ERROR")
    missing = "00000000-0000-7000-8000-000000000000"
    status, body = await call(client, "GET", f"/api/v1/api-keys/{missing}", admin)
    assert (status, error_code(body)) == (404, "API_KEY_NOT_FOUND")


async def test_list_pages_filters_and_revoked(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    ids = [
        (await create_key(client, admin, name=f"k{i}", tenant_id=tenant["id"]))["id"]
        for i in range(5)
    ]
    path = f"/api/v1/api-keys?tenant_id={tenant['id']}&limit=2"
    seen: list[str] = []
    cursor = None
    while True:
        status, page = await call(
            client, "GET", path + (f"&cursor={cursor}" if cursor else ""), admin
        )
        assert status == 200, page
        seen += [k["id"] for k in page["data"]]
        assert page["has_more"] == (page["next_cursor"] is not None)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids
    assert all("plaintext_key" not in k for k in page["data"])

    status, _ = await call(client, "DELETE", f"/api/v1/api-keys/{ids[0]}", admin)
    assert status == 204
    status, page = await call(client, "GET", f"/api/v1/api-keys?tenant_id={tenant['id']}", admin)
    assert [k["id"] for k in page["data"]] == ids[1:]
    status, page = await call(
        client,
        "GET",
        f"/api/v1/api-keys?tenant_id={tenant['id']}&include_revoked=true",
        admin,
    )
    assert [k["id"] for k in page["data"]] == ids
    assert page["data"][0]["status"] == "revoked"

    for query in ("limit=0", "limit=101", "cursor=nope", "include_revoked=maybe", "colour=red"):
        status, data = await call(client, "GET", f"/api/v1/api-keys?{query}", admin)
        assert (status, error_code(data)) == (400, "VALIDATION_ERROR"), query


async def test_patch_changes_settings_and_takes_effect(client, admin) -> None:
    created = await create_key(client, admin, name="before", scopes=["read"])
    key_headers = as_key(created)
    status, _ = await call(client, "POST", "/api/v1/tenants", key_headers, {})
    assert status == 403
    status, body = await call(
        client,
        "PATCH",
        f"/api/v1/api-keys/{created['id']}",
        admin,
        {
            "name": "after",
            "scopes": ["read", "write"],
            "rate_limit_max": 7,
            "rate_limit_window": "2m",
            "expires_at": iso_in(7200),
        },
    )
    assert status == 200, body
    assert (body["name"], body["scopes"], body["rate_limit_max"], body["rate_limit_window"]) == (
        "after", ["read", "write"], 7, "2m",
    )  # fmt: skip
    assert "plaintext_key" not in body
    # The cached key picks up its new scopes and limit on the very next request.
    resp = await client.post(
        "/api/v1/tenants", json={"name": "x", "slug": f"p_{created['id'][-8:]}"},
        headers=key_headers,
    )  # fmt: skip
    assert resp.status == 201
    assert resp.headers["X-RateLimit-Limit"] == "7"

    status, body = await call(
        client,
        "PATCH",
        f"/api/v1/api-keys/{created['id']}",
        admin,
        {"rate_limit_max": None, "rate_limit_window": None, "expires_at": None},
    )
    assert status == 200
    assert (body["rate_limit_max"], body["rate_limit_window"], body["expires_at"]) == (
        None, None, None,
    )  # fmt: skip
    resp = await client.get("/api/v1/tenants", headers=key_headers)
    assert resp.headers["X-RateLimit-Limit"] == str(client.app[SETTINGS].rate_limit_max)

    for bad, field in (
        ({"rate_limit_window": "soon"}, "rate_limit_window"),
        ({"scopes": []}, "scopes"),
        ({"name": None}, "name"),
        ({"tenant_id": None}, "tenant_id"),
        ({"expires_at": "2000-01-01T00:00:00Z"}, "expires_at"),
    ):
        status, data = await call(client, "PATCH", f"/api/v1/api-keys/{created['id']}", admin, bad)
        assert (status, data["error"]["details"][0]["field"]) == (400, field), bad


async def test_revoke_is_immediate_and_idempotent(client, admin, db_conn) -> None:
    created = await create_key(client, admin)
    key_headers = as_key(created)
    assert (await call(client, "GET", "/api/v1/tenants", key_headers))[0] == 200
    for _ in range(2):
        resp = await client.delete(f"/api/v1/api-keys/{created['id']}", headers=admin)
        assert resp.status == 204
    status, body = await call(client, "GET", "/api/v1/tenants", key_headers)
    assert (status, error_code(body)) == (401, "INVALID_CREDENTIALS")
    status, body = await call(client, "GET", f"/api/v1/api-keys/{created['id']}", admin)
    assert body["status"] == "revoked"
    assert body["revoked_at"] is not None
    entries = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE action = 'api_key.revoked' AND resource_id = $1",
        created["id"],
    )
    assert entries == 1  # the second DELETE changed nothing and recorded nothing
    status, body = await call(client, "PATCH", f"/api/v1/api-keys/{created['id']}", admin, {})
    assert (status, error_code(body)) == (409, "API_KEY_REVOKED")


async def test_rotate_without_grace(client, admin) -> None:
    old = await create_key(
        client, admin, name="svc", scopes=["read", "write"], rate_limit_max=40,
        rate_limit_window="1 hour", environment="test",
    )  # fmt: skip
    assert (await call(client, "GET", "/api/v1/tenants", as_key(old)))[0] == 200
    resp = await client.post(f"/api/v1/api-keys/{old['id']}/rotate", headers=admin)
    new = await resp.json()
    assert resp.status == 201, new
    assert new["plaintext_key"] != old["plaintext_key"]
    assert new["plaintext_key"].startswith("sk_test_")
    assert new["rotated_from"] == old["id"]
    same = ("name", "scopes", "rate_limit_max", "rate_limit_window", "tenant_id", "environment")
    assert {f: new[f] for f in same} == {f: old[f] for f in same}
    status, body = await call(client, "GET", "/api/v1/tenants", as_key(old))
    assert (status, error_code(body)) == (401, "INVALID_CREDENTIALS")
    assert (await call(client, "GET", "/api/v1/tenants", as_key(new)))[0] == 200
    status, body = await call(client, "GET", f"/api/v1/api-keys/{old['id']}", admin)
    assert body["status"] == "revoked"
    # A revoked key cannot be rotated again.
    status, body = await call(client, "POST", f"/api/v1/api-keys/{old['id']}/rotate", admin)
    assert (status, error_code(body)) == (409, "API_KEY_REVOKED")


async def test_rotate_with_grace(client, admin) -> None:
    old = await create_key(client, admin, scopes=["read"])
    status, new = await call(
        client, "POST", f"/api/v1/api-keys/{old['id']}/rotate", admin,
        {"grace_period_seconds": 3},
    )  # fmt: skip
    assert status == 201, new
    # During the grace period both keys work and the old one still shows as active.
    assert (await call(client, "GET", "/api/v1/tenants", as_key(old)))[0] == 200
    assert (await call(client, "GET", "/api/v1/tenants", as_key(new)))[0] == 200
    status, body = await call(client, "GET", f"/api/v1/api-keys/{old['id']}", admin)
    assert body["status"] == "active"
    revoked_at = datetime.fromisoformat(body["revoked_at"])
    # A key being rotated out cannot be rotated a second time.
    status, body = await call(client, "POST", f"/api/v1/api-keys/{old['id']}/rotate", admin)
    assert (status, error_code(body)) == (409, "API_KEY_REVOKED")
    await asyncio.sleep(max(0.0, (revoked_at - datetime.now(UTC)).total_seconds()) + 0.05)
    status, body = await call(client, "GET", "/api/v1/tenants", as_key(old))
    assert (status, error_code(body)) == (401, "INVALID_CREDENTIALS")
    assert (await call(client, "GET", "/api/v1/tenants", as_key(new)))[0] == 200
    status, body = await call(client, "GET", f"/api/v1/api-keys/{old['id']}", admin)
    assert body["status"] == "revoked"


async def test_rotate_body_validation(client, admin) -> None:
    key = await create_key(client, admin)
    for bad in ({"grace_period_seconds": -1}, {"grace_period_seconds": 604_801}, {"grace": 5}):
        status, body = await call(
            client, "POST", f"/api/v1/api-keys/{key['id']}/rotate", admin, bad
        )
        assert (status, error_code(body)) == (400, "VALIDATION_ERROR"), bad
    status, body = await call(client, "GET", "/api/v1/tenants", as_key(key))
    assert status == 200  # failed rotations left the key alone


async def test_expired_key_is_refused_even_when_cached(client, admin) -> None:
    created = await create_key(client, admin, expires_at=iso_in(2.0))
    assert (await call(client, "GET", "/api/v1/tenants", as_key(created)))[0] == 200
    expires = datetime.fromisoformat(created["expires_at"])
    await asyncio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.05)
    status, body = await call(client, "GET", "/api/v1/tenants", as_key(created))
    assert (status, error_code(body)) == (401, "INVALID_CREDENTIALS")
    status, body = await call(client, "GET", f"/api/v1/api-keys/{created['id']}", admin)
    assert body["status"] == "expired"
    status, body = await call(client, "POST", f"/api/v1/api-keys/{created['id']}/rotate", admin)
    assert (status, error_code(body)) == (409, "API_KEY_REVOKED")
    # An expired key can be given a new expiry, and works again at once.
    status, body = await call(client, "PATCH", f"/api/v1/api-keys/{created['id']}", admin,
                              {"expires_at": iso_in(3600)})  # fmt: skip
    assert (status, body["status"]) == (200, "active")
    assert (await call(client, "GET", "/api/v1/tenants", as_key(created)))[0] == 200


async def test_dormant_lists_keys_unused_for_days(client, admin, db_conn) -> None:
    used_long_ago = await create_key(client, admin, name="old-use")
    never_used_old = await create_key(client, admin, name="never")
    recent = await create_key(client, admin, name="recent")
    revoked = await create_key(client, admin, name="revoked")
    await db_conn.execute(
        "UPDATE api_keys SET last_used_at = now() - interval '100 days' WHERE id = ANY($1)",
        [used_long_ago["id"], revoked["id"]],
    )
    await db_conn.execute(
        "UPDATE api_keys SET created_at = now() - interval '200 days', last_used_at = NULL "
        "WHERE id = $1",
        never_used_old["id"],
    )
    await db_conn.execute(
        "UPDATE api_keys SET created_at = now() - interval '200 days', "
        "last_used_at = now() - interval '10 days' WHERE id = $1",
        recent["id"],
    )
    assert (await call(client, "DELETE", f"/api/v1/api-keys/{revoked['id']}", admin))[0] == 204
    ours = {used_long_ago["id"], never_used_old["id"], recent["id"], revoked["id"]}

    status, body = await call(client, "GET", "/api/v1/api-keys/dormant", admin)
    assert status == 200, body
    assert {k["id"] for k in body} & ours == {used_long_ago["id"], never_used_old["id"]}
    assert all("plaintext_key" not in k for k in body)
    status, body = await call(client, "GET", "/api/v1/api-keys/dormant?days=5", admin)
    assert {k["id"] for k in body} & ours == {
        used_long_ago["id"], never_used_old["id"], recent["id"],
    }  # fmt: skip
    status, body = await call(client, "GET", "/api/v1/api-keys/dormant?days=150", admin)
    assert {k["id"] for k in body} & ours == {never_used_old["id"]}
    for bad in ("days=0", "days=3651", "days=x"):
        status, body = await call(client, "GET", f"/api/v1/api-keys/dormant?{bad}", admin)
        assert (status, error_code(body)) == (400, "VALIDATION_ERROR")


async def test_last_used_at_is_written_in_the_background(client, admin) -> None:
    created = await create_key(client, admin)
    assert (await call(client, "GET", "/api/v1/tenants", as_key(created)))[0] == 200
    first = None
    for _ in range(100):
        _, body = await call(client, "GET", f"/api/v1/api-keys/{created['id']}", admin)
        first = body["last_used_at"]
        if first is not None:
            break
        await asyncio.sleep(0.02)
    assert first is not None
    for _ in range(3):
        assert (await call(client, "GET", "/api/v1/tenants", as_key(created)))[0] == 200
    await asyncio.sleep(0.1)
    _, body = await call(client, "GET", f"/api/v1/api-keys/{created['id']}", admin)
    assert body["last_used_at"] == first  # at most once a minute


async def test_admin_routes_need_admin(client, admin) -> None:
    created = await create_key(client, admin, scopes=["read", "write"])
    for method, path in (
        ("GET", "/api/v1/api-keys"),
        ("POST", "/api/v1/api-keys"),
        ("GET", "/api/v1/api-keys/dormant"),
        ("GET", f"/api/v1/api-keys/{created['id']}"),
        ("DELETE", f"/api/v1/api-keys/{created['id']}"),
        ("GET", "/api/v1/roles"),
    ):
        status, body = await call(client, method, path, as_key(created), {"name": "x"})
        assert (status, error_code(body)) == (403, "INSUFFICIENT_SCOPE"), path
    status, body = await call(client, "GET", "/api/v1/api-keys", {})
    assert (status, error_code(body)) == (401, "UNAUTHORIZED")


PRODUCTION_KEY = base64.b64encode(os.urandom(32)).decode()


@pytest.mark.parametrize(
    ("settings_env", "expected"),
    [
        # Production refuses the tests' patterned encryption key: a random one.
        ({"SERVICE_ENV": "production", "SERVICE_ENCRYPTION_KEY": PRODUCTION_KEY}, "live"),
        ({}, "test"),
        ({"API_KEY_ENVIRONMENTS": "live"}, "live"),
    ],
)
async def test_the_default_environment_follows_the_deployment(
    client, admin, settings_env, expected
) -> None:
    resp = await client.post("/api/v1/api-keys", json={"name": "default"}, headers=admin)
    body = await resp.json()
    assert resp.status == 201, body
    assert (body["environment"], body["plaintext_key"][:8]) == (expected, f"sk_{expected}_")
