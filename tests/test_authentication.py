"""Authentication and authorization: keys, JWT, scopes, admin routes, subtree restriction."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.auth.keys import generate_key
from tests.conftest import JWT_SECRET
from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.keys import bearer, key_headers, make_key, make_token


async def error_of(resp: Any) -> tuple[int, str]:
    return resp.status, (await resp.json())["error"]["code"]


async def test_no_credentials_is_401_with_a_challenge(client: TestClient) -> None:
    resp = await client.get("/api/v1/tenants")
    assert await error_of(resp) == (401, "UNAUTHORIZED")
    assert "Bearer" in resp.headers["WWW-Authenticate"]


async def test_public_routes_need_no_credentials(client: TestClient) -> None:
    resp = await client.get("/health")
    assert (resp.status, await resp.json()) == (200, {"status": "ok"})
    resp = await client.get("/ready")
    assert resp.status == 200
    assert (await resp.json())["status"] == "ok"


@pytest.mark.parametrize(
    "header",
    [
        {"X-API-Key": "nonsense"},
        {"X-API-Key": ""},
        {"X-API-Key": generate_key("live").plaintext},  # well formed, never issued
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not.a.jwt"},
    ],
)
async def test_bad_credentials_are_401(client: TestClient, header: dict[str, str]) -> None:
    resp = await client.get("/api/v1/tenants", headers=header)
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")


async def test_revoked_and_expired_keys_are_401(client: TestClient, db_conn) -> None:
    revoked = await make_key(client.app)
    await db_conn.execute(
        "UPDATE api_keys SET revoked_at = now() - interval '1 second' WHERE id = $1",
        revoked.key.id,
    )
    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": revoked.plaintext})
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")
    expired = await make_key(client.app)
    await db_conn.execute(
        "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1",
        expired.key.id,
    )
    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": expired.plaintext})
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")


async def test_a_cached_key_stops_working_when_it_expires(client: TestClient, db_conn) -> None:
    # Each cached key's principal is worked out once (service/auth/authenticator.py):
    # its expiry must still be checked on every request.
    issued = await make_key(client.app)
    headers = {"X-API-Key": issued.plaintext}
    expires_at = await db_conn.fetchval(
        "UPDATE api_keys SET expires_at = now() + interval '1 second' WHERE id = $1"
        " RETURNING expires_at",
        issued.key.id,
    )
    for _ in range(3):  # the first looks the key up, the next ones find it cached
        assert (await client.get("/api/v1/tenants", headers=headers)).status == 200
    await asyncio.sleep(max(0.0, expires_at.timestamp() - time.time()) + 0.01)
    resp = await client.get("/api/v1/tenants", headers=headers)
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")


async def test_last_used_at_is_recorded(client: TestClient, db_conn) -> None:
    issued = await make_key(client.app)
    query = "SELECT last_used_at FROM api_keys WHERE id = $1"
    assert await db_conn.fetchval(query, issued.key.id) is None
    await client.get("/api/v1/tenants", headers={"X-API-Key": issued.plaintext})
    # Written in the background, right after the request (service/auth/usage.py).
    for _ in range(100):
        if await db_conn.fetchval(query, issued.key.id) is not None:
            break
        await asyncio.sleep(0.05)
    assert await db_conn.fetchval(query, issued.key.id) is not None


@pytest.mark.parametrize(
    "token_kwargs",
    [
        {"secret": "wrong-secret-0123456789abcdefghijklmnop"},
        {"exp": int(time.time()) - 120},
        {"nbf": int(time.time()) + 600},
        {"sub": None},
        {"scopes": ["read", "superuser"]},
        {"tenant_id": "not-a-uuid"},
        # Validly signed but unusable: these were 500s (datetime overflow, UTF-8 encoding).
        {"exp": 10**20},
        {"sub": "\ud800"},
        {"iss": "\udfff"},
    ],
)
async def test_bad_tokens_are_401(client: TestClient, token_kwargs: dict[str, Any]) -> None:
    secret = token_kwargs.pop("secret", JWT_SECRET)
    resp = await client.get("/api/v1/tenants", headers=bearer(make_token(secret, **token_kwargs)))
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")


async def test_a_key_and_a_token_together_are_refused(client: TestClient, admin) -> None:
    # Even when both are valid: which one was meant cannot be known.
    token = bearer(make_token(JWT_SECRET, scopes=["read"]))
    for authorization in (token["Authorization"], "Bearer not.a.jwt", ""):
        resp = await client.get(
            "/api/v1/tenants", headers={**admin, "Authorization": authorization}
        )
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (400, "AMBIGUOUS_CREDENTIALS")
        assert body["error"]["message"] == "send either X-API-Key or Authorization, not both"
    # Public routes take no credentials, so none are ambiguous there.
    resp = await client.get("/health", headers={**admin, **token})
    assert resp.status == 200


async def test_alg_none_and_other_algorithms_are_401(client: TestClient) -> None:
    import base64
    import json

    def b64(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    unsigned = f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64({'sub': 'x', 'scopes': ['admin']})}."
    resp = await client.get("/api/v1/tenants", headers=bearer(unsigned))
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")
    hs512 = make_token(JWT_SECRET, algorithm="HS512", scopes=["read"])
    resp = await client.get("/api/v1/tenants", headers=bearer(hs512))
    assert await error_of(resp) == (401, "INVALID_CREDENTIALS")


async def test_token_without_scopes_is_read_only(client: TestClient, admin) -> None:
    token = bearer(make_token(JWT_SECRET))
    assert (await client.get("/api/v1/tenants", headers=token)).status == 200
    resp = await client.post(
        "/api/v1/tenants", json={"name": "x", "slug": unique_slug()}, headers=token
    )
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    writer = bearer(make_token(JWT_SECRET, scopes="read write"))
    resp = await client.post(
        "/api/v1/tenants", json={"name": "x", "slug": unique_slug()}, headers=writer
    )
    assert resp.status == 201


async def test_scopes_per_method(client: TestClient) -> None:
    read_only = await key_headers(client.app, ["read"])
    write_only = await key_headers(client.app, ["write"])
    assert (await client.get("/api/v1/tenants", headers=read_only)).status == 200
    resp = await client.post(
        "/api/v1/tenants", json={"name": "x", "slug": unique_slug()}, headers=read_only
    )
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    resp = await client.get("/api/v1/tenants", headers=write_only)
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    resp = await client.post(
        "/api/v1/tenants", json={"name": "x", "slug": unique_slug()}, headers=write_only
    )
    assert resp.status == 201


def test_admin_only_prefixes_follow_the_spec() -> None:
    from service.auth.authorization import is_admin_path, required_scopes

    for path in (
        "/api/v1/api-keys",
        "/api/v1/api-keys/{id}/rotate",
        "/api/v1/audit-logs",
        "/api/v1/maintenance/purge-expired",
        "/api/v1/regions",
        "/api/v1/roles/{id}",
        "/api/v1/tenants/{id}/purge",
        "/api/v1/tenants/{id}/export",
        "/api/v1/tenants/{id}/migrate-region",
    ):
        assert is_admin_path(path), path
    for path in ("/api/v1/tenants", "/api/v1/tenants/{id}/move", "/api/v1/webhooks", "/health"):
        assert not is_admin_path(path), path
    assert required_scopes("GET", admin=True) == ("read", "admin")
    assert required_scopes("POST", admin=True) == ("admin",)
    assert required_scopes("DELETE", admin=False) == ("write",)


async def test_tenant_scoped_key_sees_and_touches_only_its_subtree(
    client: TestClient, admin
) -> None:
    root = await create_tenant(client, admin, name="root")
    mine = await create_tenant(client, admin, name="mine", parent_id=root["id"])
    below = await create_tenant(client, admin, name="below", parent_id=mine["id"])
    sibling = await create_tenant(client, admin, name="sibling", parent_id=root["id"])
    scoped = await key_headers(client.app, ["read", "write"], tenant_id=mine["id"])

    listed = await get_json(client, "/api/v1/tenants?limit=100", scoped)
    assert [t["name"] for t in listed["data"]] == ["mine", "below"]
    assert (await get_json(client, f"/api/v1/tenants/{below['id']}", scoped))["id"] == below["id"]
    ancestors = await get_json(client, f"/api/v1/tenants/{below['id']}/ancestors", scoped)
    assert [t["name"] for t in ancestors] == ["mine"]

    outside = [root["id"], sibling["id"]]
    for tenant_id in outside:
        for method, path, body in (
            ("GET", "", None),
            ("PATCH", "", {"name": "stolen"}),
            ("DELETE", "", None),
            ("GET", "/ancestors", None),
            ("GET", "/descendants", None),
            ("GET", "/children", None),
            ("POST", "/move", {"new_parent_id": mine["id"]}),
            ("POST", "/restore", None),
        ):
            resp = await client.request(
                method, f"/api/v1/tenants/{tenant_id}{path}", json=body, headers=scoped
            )
            assert await error_of(resp) == (404, "TENANT_NOT_FOUND"), (method, path)
        resp = await client.get(f"/api/v1/tenants?parent_id={tenant_id}", headers=scoped)
        assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
        assert (await get_json(client, f"/api/v1/tenants?slug={root['slug']}", scoped))[
            "data"
        ] == []
    # moving inside the subtree under an outside parent, or creating outside: 404 / 403
    status, code = await error_of(
        await client.post(
            f"/api/v1/tenants/{below['id']}/move", json={"new_parent_id": sibling["id"]},
            headers=scoped,
        )
    )  # fmt: skip
    assert (status, code) == (404, "TENANT_NOT_FOUND")
    resp = await client.post(
        f"/api/v1/tenants/{below['id']}/move", json={"new_parent_id": None}, headers=scoped
    )
    assert await error_of(resp) == (403, "TENANT_ACCESS_DENIED")
    resp = await client.post(
        "/api/v1/tenants", json={"name": "r", "slug": unique_slug()}, headers=scoped
    )
    assert await error_of(resp) == (403, "TENANT_ACCESS_DENIED")
    child = await create_tenant(client, scoped, parent_id=below["id"])
    assert child["depth"] == 3
    # nothing outside changed
    assert (await get_json(client, f"/api/v1/tenants/{root['id']}", admin))["name"] == "root"


async def test_tenant_scoped_token_is_restricted_like_a_key(client: TestClient, admin) -> None:
    root = await create_tenant(client, admin)
    mine = await create_tenant(client, admin, parent_id=root["id"])
    token = bearer(make_token(JWT_SECRET, scopes=["read"], tenant_id=mine["id"]))
    assert (await client.get(f"/api/v1/tenants/{mine['id']}", headers=token)).status == 200
    resp = await client.get(f"/api/v1/tenants/{root['id']}", headers=token)
    assert await error_of(resp) == (404, "TENANT_NOT_FOUND")
