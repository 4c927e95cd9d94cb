"""Roles are judged against the tree as it is now (issue 16, item 2): a move that would take
a key out of the subtree owning its role is refused, and a key that ends up outside its
role's subtree anyway (a database from before the check) gets nothing from that role."""

from __future__ import annotations

from tests.support.access import as_key, call, create_key, create_role, error_code
from tests.support.api import create_tenant, get_json, move
from tests.support.keys import key_headers


async def _setup(client, admin):
    """X > T (T holds key K with X's role R); Y another tree; an admin key scoped to X."""
    x = await create_tenant(client, admin)
    t = await create_tenant(client, admin, parent_id=x["id"])
    y = await create_tenant(client, admin)
    x_admin = await key_headers(client.app, ("read", "write", "admin"), tenant_id=x["id"])
    role = await create_role(client, x_admin, tenant_id=x["id"], scopes=["read"])
    key = await create_key(
        client, x_admin, tenant_id=t["id"], scopes=["read", "write", "admin"], role_id=role["id"]
    )
    return x, t, y, x_admin, role, key


async def test_the_reviewed_exploit_fails(client, admin, db_conn) -> None:
    x, t, y, x_admin, role, key = await _setup(client, admin)
    # 1. Moving T (with K) under Y would take K out of its role's subtree: refused.
    status, body = await move(client, admin, t["id"], y["id"])
    assert (status, error_code(body)) == (409, "ROLE_OUTSIDE_SUBTREE")
    assert body["error"]["details"] == [
        {"field": f"api_keys/{key['id']}", "message": f"holds role {role['id']} of {x['id']}"}
    ]
    assert (await get_json(client, f"/api/v1/tenants/{t['id']}", admin))["parent_id"] == x["id"]
    # 2. X's admin raises the role: K gets it, as a key inside X it should.
    status, body = await call(client, "PATCH", f"/api/v1/roles/{role['id']}", x_admin,
                              {"scopes": ["read", "write", "admin"]})  # fmt: skip
    assert status == 200, body
    # 3. Even if K ends up outside X (a stale assignment: forced here in SQL), it holds
    #    nothing through X's role: no admin key minted in the new tree.
    await db_conn.execute("UPDATE api_keys SET role_id = NULL WHERE id = $1", key["id"])
    assert (await move(client, admin, t["id"], y["id"]))[0] == 200
    await db_conn.execute("UPDATE api_keys SET role_id = $2 WHERE id = $1", key["id"], role["id"])
    minted = {"name": "forever", "scopes": ["read", "write", "admin"], "tenant_id": t["id"]}
    status, body = await call(client, "POST", "/api/v1/api-keys", as_key(key), minted)
    assert (status, error_code(body)) == (403, "INSUFFICIENT_SCOPE")
    assert await db_conn.fetchval("SELECT count(*) FROM api_keys WHERE name = 'forever'") == 0
    scopes = await get_json(client, f"/api/v1/api-keys/{key['id']}/scopes", admin)
    assert scopes == {"api_key_id": key["id"], "scopes": [], "source": "role",
                      "role_id": role["id"]}  # fmt: skip
    # X's admin can no longer assign its role to K (K is outside X: not even visible).
    status, body = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", x_admin,
                              {"role_id": role["id"]})  # fmt: skip
    assert (status, error_code(body)) == (404, "API_KEY_NOT_FOUND")
    # Nor delete its role, which would hand K back its own (admin) scopes.
    status, body = await call(client, "DELETE", f"/api/v1/roles/{role['id']}", x_admin)
    assert (status, body["error"]) == (409, {
        "code": "ROLE_OUTSIDE_SUBTREE",
        "message": "the role is held by 1 API key(s) outside its tenant's subtree; their own "
                   "admins must remove it from them first",
        "request_id": body["error"]["request_id"],
    })  # fmt: skip
    # Y's admins repair it: removing the stale role gives K its own scopes back.
    status, body = await call(client, "DELETE", f"/api/v1/api-keys/{key['id']}/role", admin)
    assert (status, body["effective_scopes"]) == (200, ["admin", "read", "write"])
    status, _ = await call(client, "DELETE", f"/api/v1/roles/{role['id']}", x_admin)
    assert status == 204


async def test_moves_that_keep_keys_inside_their_roles_subtree_pass(client, admin) -> None:
    x, t, _, _, role, key = await _setup(client, admin)
    inner = await create_tenant(client, admin, parent_id=x["id"])
    # Within X: still below the role's owner.
    assert (await move(client, admin, t["id"], inner["id"]))[0] == 200
    # X itself moves with its roles and keys.
    other = await create_tenant(client, admin)
    assert (await move(client, admin, x["id"], other["id"]))[0] == 200
    # A role owned inside the moved subtree travels along.
    t_role = await create_role(client, admin, tenant_id=t["id"], scopes=["read"])
    below = await create_tenant(client, admin, parent_id=t["id"])
    await create_key(client, admin, tenant_id=below["id"], scopes=["read"], role_id=t_role["id"])
    # A revoked key does not hold a move up (it keeps its role, and can do nothing).
    status, _ = await call(client, "DELETE", f"/api/v1/api-keys/{key['id']}", admin)
    assert status == 204
    assert (await move(client, admin, t["id"], None))[0] == 200
    scopes = await get_json(client, f"/api/v1/api-keys/{key['id']}/scopes", admin)
    assert (scopes["role_id"], scopes["scopes"]) == (role["id"], [])


async def test_assigning_checks_the_tree_as_it_is_now(client, admin) -> None:
    _, t, y, _, role, key = await _setup(client, admin)
    status, _ = await call(client, "DELETE", f"/api/v1/api-keys/{key['id']}/role", admin)
    assert status == 200
    assert (await move(client, admin, t["id"], y["id"]))[0] == 200
    # The global admin sees both, but the role no longer fits the key's tenant.
    status, body = await call(client, "PUT", f"/api/v1/api-keys/{key['id']}/role", admin,
                              {"role_id": role["id"]})  # fmt: skip
    assert (status, error_code(body)) == (403, "TENANT_ACCESS_DENIED")
