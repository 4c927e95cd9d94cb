"""Roles through HTTP: CRUD, assignment and removal taking effect on the very next
request, effective scopes, and tenant roles limited to their subtree."""

from __future__ import annotations

from tests.support.access import as_key, call, create_key, create_role, error_code
from tests.support.api import create_tenant, unique_slug

ROLE_FIELDS = {"id", "tenant_id", "name", "description", "scopes", "created_at", "updated_at"}
MISSING = "00000000-0000-7000-8000-000000000000"


async def can_write(client, headers) -> int:
    status, _ = await call(
        client, "POST", "/api/v1/tenants", headers, {"name": "w", "slug": unique_slug("w")}
    )
    return status


async def test_role_crud(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    resp = await client.post(
        "/api/v1/roles",
        json={"name": "Auditor", "scopes": ["read", "admin"], "description": "reads audit logs"},
        headers=admin,
    )
    role = await resp.json()
    assert resp.status == 201, role
    assert resp.headers["Location"] == f"/api/v1/roles/{role['id']}"
    assert set(role) == ROLE_FIELDS
    assert (role["name"], role["scopes"], role["description"], role["tenant_id"]) == (
        "Auditor", ["admin", "read"], "reads audit logs", None,
    )  # fmt: skip
    scoped = await create_role(client, admin, name="Auditor", tenant_id=tenant["id"])
    assert scoped["tenant_id"] == tenant["id"]  # same name, other scope: allowed

    status, body = await call(
        client, "POST", "/api/v1/roles", admin, {"name": "AUDITOR", "scopes": ["read"]}
    )
    assert (status, error_code(body)) == (409, "CONFLICT")

    status, body = await call(client, "GET", f"/api/v1/roles/{role['id']}", admin)
    assert (status, body) == (200, role)
    status, body = await call(client, "GET", "/api/v1/roles", admin)
    assert {role["id"], scoped["id"]} <= {r["id"] for r in body}
    status, body = await call(client, "GET", f"/api/v1/roles?tenant_id={tenant['id']}", admin)
    assert [r["id"] for r in body] == [scoped["id"]]

    status, body = await call(
        client, "PATCH", f"/api/v1/roles/{role['id']}", admin,
        {"name": "Reader", "scopes": ["read"], "description": ""},
    )  # fmt: skip
    assert status == 200, body
    assert (body["name"], body["scopes"], body["description"]) == ("Reader", ["read"], "")
    status, body = await call(client, "PATCH", f"/api/v1/roles/{role['id']}", admin,
                              {"name": "auditor"})  # fmt: skip
    assert status == 200  # the old name is free again

    assert (await call(client, "DELETE", f"/api/v1/roles/{role['id']}", admin))[0] == 204
    status, body = await call(client, "GET", f"/api/v1/roles/{role['id']}", admin)
    assert (status, error_code(body)) == (404, "ROLE_NOT_FOUND")
    status, body = await call(client, "DELETE", f"/api/v1/roles/{role['id']}", admin)
    assert (status, error_code(body)) == (404, "ROLE_NOT_FOUND")


async def test_role_validation(client, admin) -> None:
    for bad, field in (
        ({"name": "x", "scopes": ["superuser"]}, "scopes[0]"),
        ({"name": "x", "scopes": []}, "scopes"),
        ({"name": "", "scopes": ["read"]}, "name"),
        ({"name": "x" * 101, "scopes": ["read"]}, "name"),
        ({"name": "x"}, "scopes"),
        ({"name": "x", "scopes": ["read"], "tenant_id": "nope"}, "tenant_id"),
        ({"name": "x", "scopes": ["read"], "id": MISSING}, "id"),
    ):
        status, body = await call(client, "POST", "/api/v1/roles", admin, bad)
        assert (status, body["error"]["details"][0]["field"]) == (400, field), bad
    status, body = await call(
        client, "POST", "/api/v1/roles", admin, {"name": "x", "scopes": ["read"],
                                                 "tenant_id": MISSING}
    )  # fmt: skip
    assert (status, error_code(body)) == (404, "TENANT_NOT_FOUND")
    role = await create_role(client, admin)
    status, body = await call(client, "PATCH", f"/api/v1/roles/{role['id']}", admin,
                              {"tenant_id": None})  # fmt: skip
    assert (status, body["error"]["details"][0]["field"]) == (400, "tenant_id")
    status, body = await call(client, "GET", "/api/v1/roles?tenant_id=x", admin)
    assert (status, error_code(body)) == (400, "VALIDATION_ERROR")


async def test_assign_and_remove_change_the_next_request(client, admin) -> None:
    key = await create_key(client, admin, scopes=["read"])
    writer_role = await create_role(client, admin, scopes=["read", "write"])
    headers = as_key(key)
    assert await can_write(client, headers) == 403  # the key is cached from here on

    status, body = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
                              {"role_id": writer_role["id"]})  # fmt: skip
    assert status == 200, body
    assert (body["role_id"], body["scopes"], body["effective_scopes"]) == (
        writer_role["id"], ["read"], ["read", "write"],
    )  # fmt: skip
    assert await can_write(client, headers) == 201
    status, body = await call(client, "GET", f"/api/v1/api-keys/{key['id']}/scopes", admin)
    assert body == {"api_key_id": key["id"], "scopes": ["read", "write"], "source": "role",
                    "role_id": writer_role["id"]}  # fmt: skip

    # A change of the role's scopes reaches the key on its next request.
    status, _ = await call(client, "PATCH", f"/api/v1/roles/{writer_role['id']}", admin,
                           {"scopes": ["read"]})  # fmt: skip
    assert status == 200
    assert await can_write(client, headers) == 403
    await call(client, "PATCH", f"/api/v1/roles/{writer_role['id']}", admin,
               {"scopes": ["read", "write"]})  # fmt: skip
    assert await can_write(client, headers) == 201

    status, body = await call(client, "DELETE", f"/api/v1/api-keys/{key['id']}/role", admin)
    assert status == 200, body
    assert (body["role_id"], body["effective_scopes"]) == (None, ["read"])
    assert await can_write(client, headers) == 403
    status, body = await call(client, "GET", f"/api/v1/api-keys/{key['id']}/scopes", admin)
    assert body == {"api_key_id": key["id"], "scopes": ["read"], "source": "key",
                    "role_id": None}  # fmt: skip
    # Removing again is a no-op.
    status, body = await call(client, "DELETE", f"/api/v1/api-keys/{key['id']}/role", admin)
    assert (status, body["role_id"]) == (200, None)


async def test_a_role_can_take_scopes_away(client, admin) -> None:
    key = await create_key(client, admin, scopes=["read", "write"])
    reader = await create_role(client, admin, scopes=["read"])
    headers = as_key(key)
    assert await can_write(client, headers) == 201
    await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
               {"role_id": reader["id"]})  # fmt: skip
    assert await can_write(client, headers) == 403
    # Deleting the role puts the key back on its own scopes at once.
    assert (await call(client, "DELETE", f"/api/v1/roles/{reader['id']}", admin))[0] == 204
    assert await can_write(client, headers) == 201
    _, body = await call(client, "GET", f"/api/v1/api-keys/{key['id']}", admin)
    assert (body["role_id"], body["effective_scopes"]) == (None, ["read", "write"])


async def test_key_created_with_a_role(client, admin) -> None:
    role = await create_role(client, admin, scopes=["read", "write"])
    key = await create_key(client, admin, scopes=["read"], role_id=role["id"])
    assert (key["role_id"], key["effective_scopes"]) == (role["id"], ["read", "write"])
    assert await can_write(client, as_key(key)) == 201


async def test_tenant_roles_serve_only_their_subtree(client, admin) -> None:
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    grandchild = await create_tenant(client, admin, parent_id=child["id"])
    other = await create_tenant(client, admin)
    role = await create_role(client, admin, tenant_id=child["id"], scopes=["read", "write"])

    for tenant in (None, root, other):
        key = await create_key(client, admin, tenant_id=tenant and tenant["id"])
        status, body = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
                                  {"role_id": role["id"]})  # fmt: skip
        assert (status, error_code(body)) == (403, "TENANT_ACCESS_DENIED"), tenant
        status, body = await call(
            client, "POST", "/api/v1/api-keys", admin,
            {"name": "x", "tenant_id": tenant and tenant["id"], "role_id": role["id"]},
        )  # fmt: skip
        assert (status, error_code(body)) == (403, "TENANT_ACCESS_DENIED"), tenant
    for tenant in (child, grandchild):
        key = await create_key(client, admin, tenant_id=tenant["id"])
        status, body = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
                                  {"role_id": role["id"]})  # fmt: skip
        assert status == 200, body
    global_role = await create_role(client, admin)
    key = await create_key(client, admin, tenant_id=grandchild["id"])
    status, _ = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
                           {"role_id": global_role["id"]})  # fmt: skip
    assert status == 200  # a global role serves any key


async def test_assignment_errors(client, admin) -> None:
    key = await create_key(client, admin)
    role = await create_role(client, admin)
    for path_id, body, expected in (
        (MISSING, {"role_id": role["id"]}, (404, "API_KEY_NOT_FOUND")),
        (key["id"], {"role_id": MISSING}, (404, "ROLE_NOT_FOUND")),
        (key["id"], {}, (400, "VALIDATION_ERROR")),
        (key["id"], {"role_id": "x"}, (400, "VALIDATION_ERROR")),
    ):
        status, data = await call(client, "PUT", f"/api/v1/api-keys/{path_id}/role", admin, body)
        assert (status, error_code(data)) == expected, body
    assert (await call(client, "DELETE", f"/api/v1/api-keys/{key['id']}", admin))[0] == 204
    status, data = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
                              {"role_id": role["id"]})  # fmt: skip
    assert (status, error_code(data)) == (409, "API_KEY_REVOKED")
    status, data = await call(client, "GET", f"/api/v1/api-keys/{MISSING}/scopes", admin)
    assert (status, error_code(data)) == (404, "API_KEY_NOT_FOUND")
