"""The resolved context: inheritance with locks, LOCAL policies, moves, archived
ancestors, delegated/locked flags (table-driven), and ETag / If-None-Match."""

from __future__ import annotations

import re
from typing import Any

from tests.support.api import create_tenant, get_json, move
from tests.support.entries import context, put_config, put_permission

# (tenant, key, value, source, inherited, locked), or value None: the key is absent.
ConfigRow = tuple[str, str, Any, str | None, bool, bool]
# (tenant, key, value, mode, source, locked, delegated), or value None: absent.
PermissionRow = tuple[str, str, Any, str | None, str | None, bool, bool]


async def _check(client, admin, ids, config_rows, permission_rows) -> None:
    names = {row[0] for row in [*config_rows, *permission_rows]}
    contexts = {name: await context(client, admin, ids[name]) for name in names}
    for name, key, value, source, inherited, locked in config_rows:
        got = contexts[name]["resolved_config"].get(key)
        want = (
            None
            if value is None
            else {"key": key, "value": value, "source_tenant_id": ids[source],
                  "inherited": inherited, "locked": locked}
        )  # fmt: skip
        assert got == want, f"config {key!r} at {name}"
    for name, key, value, mode, source, locked, delegated in permission_rows:
        got = contexts[name]["resolved_permissions"].get(key)
        want = (
            None
            if value is None
            else {"key": key, "value": value, "mode": mode, "source_tenant_id": ids[source],
                  "locked": locked, "delegated": delegated}
        )  # fmt: skip
        assert got == want, f"permission {key!r} at {name}"


async def test_resolution_over_a_four_level_tree(client, admin, db_conn) -> None:
    # Tree 1: R > A > B > C, and R > X. Tree 2: S > T.
    ids: dict[str, str] = {}
    ids["R"] = (await create_tenant(client, admin))["id"]
    ids["A"] = (await create_tenant(client, admin, parent_id=ids["R"]))["id"]
    ids["B"] = (await create_tenant(client, admin, parent_id=ids["A"]))["id"]
    ids["C"] = (await create_tenant(client, admin, parent_id=ids["B"]))["id"]
    ids["X"] = (await create_tenant(client, admin, parent_id=ids["R"]))["id"]
    ids["S"] = (await create_tenant(client, admin))["id"]
    ids["T"] = (await create_tenant(client, admin, parent_id=ids["S"]))["id"]

    async def cfg(name: str, key: str, value: Any, **flags: Any) -> None:
        await put_config(client, admin, ids[name], key, value, expect=201, **flags)

    async def perm(name: str, key: str, value: bool, mode: str = "INHERIT") -> None:
        await put_permission(client, admin, ids[name], key, value, mode, expect=201)

    await cfg("R", "theme", "light")
    await cfg("R", "region", "eu")
    await cfg("A", "theme", "blue")
    await cfg("B", "theme", "dark")
    await cfg("B", "limit", 5)  # older than the root's lock below
    await cfg("R", "limit", 10, locked=True)
    await cfg("B", "quota", 5, locked=True)  # a lock below, older than the root's
    await cfg("R", "quota", 50, locked=True)
    await cfg("C", "own", 1)
    await cfg("S", "limit", 99, locked=True)
    await cfg("S", "theme", "green")
    await perm("R", "users.invite", True)
    await perm("R", "admin.panel", True, "LOCAL")
    await perm("B", "users.invite", False)
    await perm("B", "users.delete", True)  # older than A's lock below
    await perm("A", "users.delete", False, "LOCKED")
    await perm("C", "sso", False, "LOCKED")  # a lock below, older than A's
    await perm("A", "sso", True, "LOCKED")
    await perm("C", "reports", True, "LOCAL")
    await perm("S", "users.delete", True)

    # Locked keys are refused below their lock.
    status, body = await put_config(client, admin, ids["C"], "limit", 1)
    assert (status, body["error"]["code"]) == (409, "CONFIG_LOCKED")
    status, body = await put_permission(client, admin, ids["C"], "users.delete", True)
    assert (status, body["error"]["code"]) == (409, "PERMISSION_LOCKED")

    await _check(
        client, admin, ids,
        [
            ("R", "theme", "light", "R", False, False),
            ("A", "theme", "blue", "A", False, False),      # override
            ("C", "theme", "dark", "B", True, False),       # nearest wins
            ("X", "theme", "light", "R", True, False),
            ("R", "limit", 10, "R", False, True),
            ("B", "limit", 10, "R", True, True),            # the root's lock beats B's own
            ("C", "limit", 10, "R", True, True),
            ("C", "region", "eu", "R", True, False),
            ("B", "quota", 50, "R", True, True),            # the lock nearest the root wins
            ("C", "quota", 50, "R", True, True),
            ("C", "own", 1, "C", False, False),
            ("B", "own", None, None, False, False),         # nothing flows upwards
            ("T", "limit", 99, "S", True, True),
        ],
        [
            ("R", "admin.panel", True, "LOCAL", "R", False, False),
            ("A", "admin.panel", None, None, None, False, False),  # LOCAL not inherited
            ("A", "users.invite", True, "INHERIT", "R", False, True),
            ("B", "users.invite", False, "INHERIT", "B", False, False),
            ("C", "users.invite", False, "INHERIT", "B", False, True),
            ("R", "users.delete", None, None, None, False, False),
            ("A", "users.delete", False, "LOCKED", "A", True, False),
            ("B", "users.delete", False, "LOCKED", "A", True, False),  # lock beats B's own
            ("C", "users.delete", False, "LOCKED", "A", True, False),
            ("C", "reports", True, "LOCAL", "C", False, False),
            ("C", "sso", True, "LOCKED", "A", True, False),  # the higher lock wins
            ("T", "users.delete", True, "INHERIT", "S", False, True),
        ],
    )  # fmt: skip

    # A move changes what the subtree inherits: B and C leave R's tree for S's.
    assert (await move(client, admin, ids["B"], ids["S"]))[0] == 200
    await _check(
        client, admin, ids,
        [
            ("C", "theme", "dark", "B", True, False),
            ("B", "limit", 99, "S", True, True),            # now S's lock
            ("C", "limit", 99, "S", True, True),
            ("C", "region", None, None, False, False),      # R's entries are gone
            ("C", "quota", 5, "B", True, True),             # B's own lock counts again
            ("A", "theme", "blue", "A", False, False),
        ],
        [
            ("B", "users.delete", True, "INHERIT", "B", False, False),  # A's lock is gone
            ("C", "users.delete", True, "INHERIT", "B", False, True),
            ("C", "users.invite", False, "INHERIT", "B", False, True),
            ("C", "admin.panel", None, None, None, False, False),
            ("C", "sso", False, "LOCKED", "C", True, False),
        ],
    )  # fmt: skip
    await put_permission(client, admin, ids["C"], "users.delete", False, expect=201)
    status, body = await put_config(client, admin, ids["C"], "limit", 1)
    assert (status, body["error"]["code"]) == (409, "CONFIG_LOCKED")

    # Archived ancestors: archiving keeps a tenant's entries, and resolution does not
    # filter by status, so the subtree inherits them again once restored.
    for name in ("C", "B"):
        assert (await client.delete(f"/api/v1/tenants/{ids[name]}", headers=admin)).status == 204
    resp = await client.get(f"/api/v1/tenants/{ids['C']}/context", headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (410, "TENANT_ARCHIVED")
    for name in ("B", "C"):
        resp = await client.post(f"/api/v1/tenants/{ids[name]}/restore", headers=admin)
        assert resp.status == 200
    await _check(
        client, admin, ids,
        [("C", "theme", "dark", "B", True, False)],
        [("C", "users.invite", False, "INHERIT", "B", False, True)],
    )  # fmt: skip
    # The API never leaves an active tenant under an archived one; should data ever be
    # in that state (restored from a backup, say), the ancestor's entries still count.
    await db_conn.execute(
        "UPDATE tenants SET status = 'archived', deleted_at = now() WHERE id = $1::uuid", ids["B"]
    )
    await _check(
        client, admin, ids,
        [("C", "theme", "dark", "B", True, False)],
        [("C", "users.invite", False, "INHERIT", "B", False, True)],
    )  # fmt: skip


async def test_context_document_etag_and_304(client, admin) -> None:
    root = await create_tenant(client, admin, isolation_strategy="SCHEMA_PER_TENANT")
    leaf = await create_tenant(client, admin, parent_id=root["id"])
    await put_config(client, admin, root["id"], "api.token", "tok-123", expect=201, sensitive=True)
    url = f"/api/v1/tenants/{leaf['id']}/context"
    resp = await client.get(url, headers=admin)
    assert resp.status == 200
    assert await resp.json() == {
        "tenant_id": leaf["id"],
        "ancestry_path": leaf["ancestry_path"],
        "depth": 1,
        "isolation_strategy": "SCHEMA_PER_TENANT",
        "resolved_config": {
            "api.token": {"key": "api.token", "value": "***", "source_tenant_id": root["id"],
                          "inherited": True, "locked": False},
        },
        "resolved_permissions": {},
    }  # fmt: skip
    etag = resp.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{32}"', etag)

    for header in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        resp = await client.get(url, headers={**admin, "If-None-Match": header})
        assert resp.status == 304, header
        assert resp.headers["ETag"] == etag
        assert await resp.read() == b""
    resp = await client.get(url, headers={**admin, "If-None-Match": '"stale"'})
    assert resp.status == 200

    # The revealed document is another representation with its own tag, never cached.
    resp = await client.get(url + "?reveal=true", headers=admin)
    assert (await resp.json())["resolved_config"]["api.token"]["value"] == "tok-123"
    assert resp.headers["ETag"] != etag
    assert resp.headers["Cache-Control"] == "no-store"

    # A change up the chain changes the tag.
    await put_permission(client, admin, root["id"], "p", True, expect=201)
    resp = await client.get(url, headers={**admin, "If-None-Match": etag})
    assert resp.status == 200
    assert resp.headers["ETag"] != etag


async def test_context_errors(client, admin) -> None:
    unknown = "01900000-0000-7000-8000-000000000000"
    data = await get_json(client, f"/api/v1/tenants/{unknown}/context", admin, expect=404)
    assert data["error"]["code"] == "TENANT_NOT_FOUND"
    await get_json(client, "/api/v1/tenants/nope/context", admin, expect=400)
    await get_json(client, f"/api/v1/tenants/{unknown}/context?reveal=maybe", admin, expect=400)
    await get_json(client, f"/api/v1/tenants/{unknown}/context?extra=1", admin, expect=400)
