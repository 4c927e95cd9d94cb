"""Privilege containment: nobody creates or edits a key or role with scopes it lacks or
a tenant outside its subtree; tenant-scoped callers cannot make global keys or roles."""

from __future__ import annotations

import pytest

from tests.support.access import as_key, call, create_key, create_role, error_code
from tests.support.api import create_tenant
from tests.support.keys import key_headers


@pytest.fixture
async def no_write(client) -> dict[str, str]:
    """An admin key without write: it may manage keys, but not hand out write."""
    return await key_headers(client.app, ("read", "admin"))


async def test_cannot_grant_scopes_it_lacks(client, admin, no_write) -> None:
    for body in (
        {"name": "x", "scopes": ["read", "write"]},
        {"name": "x", "scopes": ["write"]},
    ):
        status, data = await call(client, "POST", "/api/v1/api-keys", no_write, body)
        assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE"), body
    status, data = await call(
        client, "POST", "/api/v1/roles", no_write, {"name": "w", "scopes": ["write"]}
    )
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    # What it holds, it may grant.
    own = await create_key(client, no_write, scopes=["read", "admin"])
    reader_role = await create_role(client, no_write, scopes=["read"])

    writer_role = await create_role(client, admin, scopes=["read", "write"])
    status, data = await call(
        client, "POST", "/api/v1/api-keys", no_write,
        {"name": "x", "scopes": ["read"], "role_id": writer_role["id"]},
    )  # fmt: skip
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    status, data = await call(client, "PUT", f"/api/v1/api-keys/{own['id']}/role", no_write,
                              {"role_id": writer_role["id"]})  # fmt: skip
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    status, data = await call(client, "PATCH", f"/api/v1/api-keys/{own['id']}", no_write,
                              {"scopes": ["read", "write", "admin"]})  # fmt: skip
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    status, data = await call(client, "PATCH", f"/api/v1/roles/{reader_role['id']}", no_write,
                              {"scopes": ["read", "write"]})  # fmt: skip
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    # Nothing changed: the key still cannot write.
    status, data = await call(client, "POST", "/api/v1/tenants", as_key(own), {})
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")


async def test_cannot_edit_or_copy_keys_stronger_than_itself(client, admin, no_write) -> None:
    strong = await create_key(client, admin, scopes=["read", "write"])
    for method, path, body in (
        ("PATCH", f"/api/v1/api-keys/{strong['id']}", {"name": "renamed"}),
        ("POST", f"/api/v1/api-keys/{strong['id']}/rotate", None),  # would hand it a write key
    ):
        status, data = await call(client, method, path, no_write, body)
        assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE"), path
    # Removing a role that restrains a key would give the key its own (stronger) scopes.
    reader = await create_role(client, admin, scopes=["read"])
    await call(client, "PUT", f"/api/v1/api-keys/{strong['id']}/role", admin,
               {"role_id": reader["id"]})  # fmt: skip
    status, data = await call(client, "DELETE", f"/api/v1/api-keys/{strong['id']}/role", no_write)
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    status, data = await call(client, "DELETE", f"/api/v1/roles/{reader['id']}", no_write)
    assert (status, error_code(data)) == (403, "INSUFFICIENT_SCOPE")
    status, data = await call(client, "GET", f"/api/v1/api-keys/{strong['id']}/scopes", admin)
    assert (data["source"], data["scopes"]) == ("role", ["read"])
    # Revoking only takes power away: allowed.
    assert (await call(client, "DELETE", f"/api/v1/api-keys/{strong['id']}", no_write))[0] == 204


async def test_tenant_scoped_caller_stays_in_its_subtree(client, admin, db_conn) -> None:
    home = await create_tenant(client, admin)
    below = await create_tenant(client, admin, parent_id=home["id"])
    elsewhere = await create_tenant(client, admin)
    scoped = await key_headers(client.app, ("read", "write", "admin"), tenant_id=home["id"])

    status, data = await call(client, "POST", "/api/v1/api-keys", scoped, {"name": "g"})
    assert (status, error_code(data)) == (403, "TENANT_ACCESS_DENIED")
    status, data = await call(
        client, "POST", "/api/v1/roles", scoped, {"name": "g", "scopes": ["read"]}
    )
    assert (status, error_code(data)) == (403, "TENANT_ACCESS_DENIED")
    for path in ("/api/v1/api-keys", "/api/v1/roles"):
        body = {"name": "x", "scopes": ["read"], "tenant_id": elsewhere["id"]}
        status, data = await call(client, "POST", path, scoped, body)
        assert (status, error_code(data)) == (404, "TENANT_NOT_FOUND"), path

    mine = await create_key(client, scoped, tenant_id=below["id"])
    my_role = await create_role(client, scoped, tenant_id=home["id"])
    theirs = await create_key(client, admin, tenant_id=elsewhere["id"])
    their_role = await create_role(client, admin, tenant_id=elsewhere["id"])
    global_key = await create_key(client, admin)
    global_role = await create_role(client, admin)

    status, data = await call(client, "GET", f"/api/v1/api-keys/{mine['id']}", scoped)
    assert status == 200
    for path in (
        f"/api/v1/api-keys/{theirs['id']}",
        f"/api/v1/api-keys/{theirs['id']}/scopes",
    ):
        status, data = await call(client, "GET", path, scoped)
        assert (status, error_code(data)) == (404, "API_KEY_NOT_FOUND"), path
    status, data = await call(client, "DELETE", f"/api/v1/api-keys/{theirs['id']}", scoped)
    assert (status, error_code(data)) == (404, "API_KEY_NOT_FOUND")
    status, data = await call(client, "GET", f"/api/v1/roles/{their_role['id']}", scoped)
    assert (status, error_code(data)) == (404, "ROLE_NOT_FOUND")
    status, data = await call(client, "GET", f"/api/v1/api-keys/{global_key['id']}", scoped)
    assert (status, error_code(data)) == (403, "TENANT_ACCESS_DENIED")
    status, data = await call(client, "GET", f"/api/v1/roles/{global_role['id']}", scoped)
    assert (status, error_code(data)) == (403, "TENANT_ACCESS_DENIED")
    for role, expected in (
        (global_role, (403, "TENANT_ACCESS_DENIED")),
        (their_role, (404, "ROLE_NOT_FOUND")),
    ):
        status, data = await call(client, "PUT", f"/api/v1/api-keys/{mine['id']}/role", scoped,
                                  {"role_id": role["id"]})  # fmt: skip
        assert (status, error_code(data)) == expected
    status, data = await call(client, "PUT", f"/api/v1/api-keys/{mine['id']}/role", scoped,
                              {"role_id": my_role["id"]})  # fmt: skip
    assert status == 200

    status, page = await call(client, "GET", "/api/v1/api-keys?limit=100", scoped)
    listed = {k["id"] for k in page["data"]}
    assert mine["id"] in listed
    assert not listed & {theirs["id"], global_key["id"]}
    status, roles = await call(client, "GET", "/api/v1/roles", scoped)
    assert {r["id"] for r in roles} == {my_role["id"]}
    status, data = await call(client, "GET", f"/api/v1/api-keys?tenant_id={elsewhere['id']}",
                              scoped)  # fmt: skip
    assert (status, error_code(data)) == (404, "TENANT_NOT_FOUND")
    await db_conn.execute(
        "UPDATE api_keys SET created_at = now() - interval '3 days' WHERE id = ANY($1)",
        [mine["id"], theirs["id"], global_key["id"]],
    )
    status, dormant = await call(client, "GET", "/api/v1/api-keys/dormant?days=1", scoped)
    assert [k["id"] for k in dormant] == [mine["id"]]
