"""A reveal decrypts only what the caller may see: sensitive values inherited from above a
tenant-scoped caller's subtree stay masked (and say why) unless their owner shared them
down the tree with `reveal_to_descendants` (issue 16, item 1)."""

from __future__ import annotations

from typing import Any

from tests.support.access import call, error_code
from tests.support.api import create_tenant
from tests.support.entries import context, put_config
from tests.support.keys import key_headers

SECRET = "PLAIN-upper-4d1f"
OWN = "PLAIN-own-77ab"


async def _tree(client, admin) -> dict[str, str]:
    """A > C > D; A holds a sensitive entry, C one of its own."""
    a = await create_tenant(client, admin)
    c = await create_tenant(client, admin, parent_id=a["id"])
    d = await create_tenant(client, admin, parent_id=c["id"])
    await put_config(client, admin, a["id"], "db.password", SECRET, sensitive=True, expect=201)
    await put_config(client, admin, a["id"], "plain", "shown", expect=201)
    await put_config(client, admin, c["id"], "own.token", OWN, sensitive=True, expect=201)
    return {"A": a["id"], "C": c["id"], "D": d["id"]}


def _entry(ids: dict[str, str], at: str, key: str, source: str, value: Any, **extra: Any) -> Any:
    return {
        "key": key,
        "value": value,
        "source_tenant_id": ids[source],
        "inherited": at != source,
        "locked": False,
        **extra,
    }


async def test_reveal_keeps_values_from_above_the_callers_subtree_masked(client, admin) -> None:
    ids = await _tree(client, admin)
    scoped = await key_headers(client.app, ("read", "write", "admin"), tenant_id=ids["C"])
    outside = {"masked_reason": "outside_caller_subtree"}
    for at in ("C", "D"):
        got = (await context(client, scoped, ids[at], reveal=True))["resolved_config"]
        assert got == {
            "db.password": _entry(ids, at, "db.password", "A", "***", **outside),
            "own.token": _entry(ids, at, "own.token", "C", OWN),
            "plain": _entry(ids, at, "plain", "A", "shown"),
        }, at
    # The entry itself is out of reach, as before.
    status, body = await call(
        client, "GET", f"/api/v1/tenants/{ids['A']}/config/db.password?reveal=true", scoped
    )
    assert (status, error_code(body)) == (404, "TENANT_NOT_FOUND")
    # A global admin (and an admin scoped to A) still sees everything.
    for headers in (admin, await key_headers(client.app, tenant_id=ids["A"])):
        got = (await context(client, headers, ids["D"], reveal=True))["resolved_config"]
        assert got["db.password"] == _entry(ids, "D", "db.password", "A", SECRET)
    # The masked document is the same for everyone and carries no reason.
    masked = (await context(client, scoped, ids["D"]))["resolved_config"]
    assert masked["db.password"] == _entry(ids, "D", "db.password", "A", "***")


async def test_the_owner_may_share_a_value_down_the_tree(client, admin, db_conn) -> None:
    ids = await _tree(client, admin)
    scoped = await key_headers(client.app, ("read", "write", "admin"), tenant_id=ids["C"])
    url = f"/api/v1/tenants/{ids['A']}/config/db.password"
    # A writer without admin cannot share a secret; a caller below cannot reach the source.
    writer = await key_headers(client.app, ("read", "write"))
    status, body = await call(client, "PUT", url, writer,
                              {"value": SECRET, "reveal_to_descendants": True})  # fmt: skip
    assert (status, error_code(body)) == (403, "INSUFFICIENT_SCOPE")
    status, body = await call(client, "PUT", url, scoped,
                              {"value": SECRET, "reveal_to_descendants": True})  # fmt: skip
    assert (status, error_code(body)) == (404, "TENANT_NOT_FOUND")

    status, body = await call(client, "PUT", url, admin,
                              {"value": SECRET, "reveal_to_descendants": True})  # fmt: skip
    assert status == 200, body
    assert (body["value"], body["sensitive"], body["reveal_to_descendants"]) == ("***", True, True)
    got = (await context(client, scoped, ids["D"], reveal=True))["resolved_config"]
    assert got["db.password"] == _entry(ids, "D", "db.password", "A", SECRET)
    audit = await db_conn.fetchval(
        "SELECT changes FROM audit_logs WHERE action = 'config.updated' AND tenant_id = $1 "
        "AND resource_id = 'db.password' ORDER BY created_at DESC, id DESC LIMIT 1",
        ids["A"],
    )
    assert audit == {
        "before": {"value": "***", "locked": False, "sensitive": True,
                   "reveal_to_descendants": False},
        "after": {"value": "***", "locked": False, "sensitive": True,
                  "reveal_to_descendants": True},
    }  # fmt: skip

    # Omitted on a later PUT, the flag stays; an explicit false withdraws the share.
    status, body = await call(client, "PUT", url, admin, {"value": SECRET})
    assert (status, body["reveal_to_descendants"]) == (200, True)
    status, body = await call(client, "PUT", url, writer,
                              {"value": SECRET, "reveal_to_descendants": False})  # fmt: skip
    assert (status, body["reveal_to_descendants"]) == (200, False)
    got = (await context(client, scoped, ids["D"], reveal=True))["resolved_config"]
    assert got["db.password"]["value"] == "***"


async def test_new_entries_are_not_shared(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    status, body = await put_config(client, admin, tenant["id"], "k", "v", sensitive=True)
    assert status == 201
    assert body["reveal_to_descendants"] is False
    status, body = await call(client, "PUT", f"/api/v1/tenants/{tenant['id']}/config/k", admin,
                              {"value": "v", "reveal_to_descendants": "yes"})  # fmt: skip
    assert (status, error_code(body)) == (400, "VALIDATION_ERROR")


async def test_the_openapi_document_explains_both_fields(client) -> None:
    resp = await client.get("/api/v1/openapi.json")
    schemas = (await resp.json())["components"]["schemas"]
    masked = schemas["ResolvedConfigEntry"]["properties"]["masked_reason"]
    assert masked["enum"] == ["outside_caller_subtree"]
    assert "masked_reason" not in schemas["ResolvedConfigEntry"]["required"]
    assert "reveal_to_descendants" in schemas["ConfigEntry"]["required"]
    for shape in ("ConfigEntry", "ConfigPut"):
        field = schemas[shape]["properties"]["reveal_to_descendants"]
        assert field["type"] == "boolean"
        assert "admins of the tenants below" in field["description"]
