"""Config entry endpoints: CRUD, flags, validation, locks, events and audit entries."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.api import create_chain, create_tenant, get_json
from tests.support.entries import audits_of, events_of, put_config
from tests.support.keys import key_headers

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _entry(body: dict[str, Any]) -> dict[str, Any]:
    assert TS.match(body.pop("created_at")), body
    assert TS.match(body.pop("updated_at")), body
    return body


async def test_put_get_list_replace_delete(client, admin, db_conn) -> None:
    tenant = await create_tenant(client, admin)
    tid = tenant["id"]
    path = f"/api/v1/tenants/{tid}/config"

    resp = await client.put(f"{path}/theme", json={"value": {"color": "blue"}}, headers=admin)
    assert resp.status == 201
    assert resp.headers["Location"] == f"{path}/theme"
    assert _entry(await resp.json()) == {
        "key": "theme", "value": {"color": "blue"}, "locked": False, "sensitive": False,
        "reveal_to_descendants": False,
    }  # fmt: skip
    await put_config(client, admin, tid, "a.limit", 5, expect=201)

    listed = await get_json(client, path, admin)
    assert [(e["key"], e["value"]) for e in listed] == [
        ("a.limit", 5),
        ("theme", {"color": "blue"}),
    ]
    one = await get_json(client, f"{path}/theme", admin)
    assert _entry(one) == {
        "key": "theme", "value": {"color": "blue"}, "locked": False, "sensitive": False,
        "reveal_to_descendants": False,
    }  # fmt: skip

    # Replace (200), then the same body again: 200 and nothing recorded.
    _, replaced = await put_config(client, admin, tid, "theme", "dark", expect=200, locked=True)
    assert (replaced["value"], replaced["locked"]) == ("dark", True)
    await put_config(client, admin, tid, "theme", "dark", expect=200)
    # The tenant object shows its own config.
    assert (await get_json(client, f"/api/v1/tenants/{tid}", admin))["config"] == {
        "a.limit": 5, "theme": "dark",
    }  # fmt: skip

    resp = await client.delete(f"{path}/theme", headers=admin)
    assert resp.status == 204
    missing = await get_json(client, f"{path}/theme", admin, expect=404)
    assert missing["error"]["code"] == "CONFIG_NOT_FOUND"
    resp = await client.delete(f"{path}/theme", headers=admin)
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "CONFIG_NOT_FOUND"

    assert await events_of(db_conn, tid) == [
        ("tenant.created", await _created_payload(db_conn, tid)),
        ("config.updated", {"tenant_id": tid, "key": "theme", "value": {"color": "blue"},
                            "locked": False, "sensitive": False}),
        ("config.updated", {"tenant_id": tid, "key": "a.limit", "value": 5, "locked": False,
                            "sensitive": False}),
        ("config.updated", {"tenant_id": tid, "key": "theme", "value": "dark", "locked": True,
                            "sensitive": False}),
        ("config.deleted", {"tenant_id": tid, "key": "theme"}),
    ]  # fmt: skip
    audits = [a for a in await audits_of(db_conn, tid) if a[0].startswith("config.")]
    assert audits == [
        ("config.updated", "theme", {"before": None, "after": {
            "value": {"color": "blue"}, "locked": False, "sensitive": False,
            "reveal_to_descendants": False}}),
        ("config.updated", "a.limit", {"before": None, "after": {
            "value": 5, "locked": False, "sensitive": False, "reveal_to_descendants": False}}),
        ("config.updated", "theme", {
            "before": {"value": {"color": "blue"}, "locked": False, "sensitive": False,
                       "reveal_to_descendants": False},
            "after": {"value": "dark", "locked": True, "sensitive": False,
                      "reveal_to_descendants": False}}),
        ("config.deleted", "theme", {"before": {
            "value": "dark", "locked": True, "sensitive": False, "reveal_to_descendants": False},
            "after": None}),
    ]  # fmt: skip


async def _created_payload(conn: Any, tid: str) -> Any:
    return await conn.fetchval(
        "SELECT payload FROM events WHERE tenant_id = $1::uuid AND type = 'tenant.created'", tid
    )


async def test_omitted_flags_keep_their_values(client, admin) -> None:
    tid = (await create_tenant(client, admin))["id"]
    await put_config(client, admin, tid, "token", "abc", expect=201, sensitive=True, locked=True)
    _, kept = await put_config(client, admin, tid, "token", "def", expect=200)
    assert (kept["value"], kept["locked"], kept["sensitive"]) == ("***", True, True)
    revealed = await get_json(client, f"/api/v1/tenants/{tid}/config/token?reveal=true", admin)
    assert revealed["value"] == "def"
    # Explicit flags apply: the entry becomes plain and unlocked.
    _, plain = await put_config(client, admin, tid, "token", "ghi", sensitive=False, locked=False)
    assert (plain["value"], plain["locked"], plain["sensitive"]) == ("ghi", False, False)
    # JSON equality is strict: true is not 1, so this is a change.
    await put_config(client, admin, tid, "n", 1, expect=201)
    _, changed = await put_config(client, admin, tid, "n", True, expect=200)
    assert changed["value"] is True


@pytest.mark.parametrize(
    ("key", "body", "field"),
    [
        ("9starts_with_digit", {"value": 1}, "key"),
        ("has space", {"value": 1}, "key"),
        ("k" * 129, {"value": 1}, "key"),
        ("ok", {"value": None}, "value"),
        ("ok", {}, "value"),
        ("ok", {"value": 1, "locked": "yes"}, "locked"),
        ("ok", {"value": 1, "sensitive": 1}, "sensitive"),
        ("ok", {"value": 1, "extra": True}, "extra"),
        ("ok", {"value": "x" * (64 * 1024)}, "value"),
        ("ok", {"value": {"deep": "\u0000"}}, "value"),
    ],
)
async def test_bad_requests_are_400(client, admin, key, body, field) -> None:
    tid = (await create_tenant(client, admin))["id"]
    resp = await client.put(f"/api/v1/tenants/{tid}/config/{key}", json=body, headers=admin)
    data = await resp.json()
    assert resp.status == 400, data
    assert data["error"]["code"] == "VALIDATION_ERROR"
    assert data["error"]["details"][0]["field"] == field


async def test_limits_at_the_edge_are_accepted(client, admin) -> None:
    tid = (await create_tenant(client, admin))["id"]
    key = "K" + "a_.:-9" * 21 + "x"  # 128 characters, every allowed kind
    assert len(key) == 128
    big = "x" * (64 * 1024 - 2)  # with its quotes exactly 64 KiB of JSON
    await put_config(client, admin, tid, key, big, expect=201)
    assert (await get_json(client, f"/api/v1/tenants/{tid}/config/{key}", admin))["value"] == big


async def test_unknown_archived_and_malformed_tenants(client, admin) -> None:
    unknown = "01900000-0000-7000-8000-000000000000"
    resp = await client.put(f"/api/v1/tenants/{unknown}/config/k", json={"value": 1}, headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (404, "TENANT_NOT_FOUND")
    resp = await client.get("/api/v1/tenants/not-a-uuid/config", headers=admin)
    assert resp.status == 400
    tid = (await create_tenant(client, admin))["id"]
    await put_config(client, admin, tid, "k", 1, expect=201)
    assert (await client.delete(f"/api/v1/tenants/{tid}", headers=admin)).status == 204
    for method, url in [
        ("GET", f"/api/v1/tenants/{tid}/config"),
        ("GET", f"/api/v1/tenants/{tid}/config/k"),
        ("PUT", f"/api/v1/tenants/{tid}/config/k"),
        ("DELETE", f"/api/v1/tenants/{tid}/config/k"),
    ]:
        resp = await client.request(method, url, json={"value": 2}, headers=admin)
        assert (resp.status, (await resp.json())["error"]["code"]) == (410, "TENANT_ARCHIVED")


async def test_scopes_and_tenant_scoped_callers(client, admin) -> None:
    root, child = await create_chain(client, admin, 2)
    await put_config(client, admin, child["id"], "s", "secret-value", expect=201, sensitive=True)
    reader = await key_headers(client.app, ("read",))
    resp = await client.put(
        f"/api/v1/tenants/{child['id']}/config/x", json={"value": 1}, headers=reader
    )
    assert (resp.status, (await resp.json())["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")
    # Asking to reveal without admin is refused, not silently masked.
    writer = await key_headers(client.app, ("read", "write"))
    for url in (
        f"/api/v1/tenants/{child['id']}/config?reveal=true",
        f"/api/v1/tenants/{child['id']}/config/s?reveal=true",
        f"/api/v1/tenants/{child['id']}/context?reveal=true",
    ):
        data = await get_json(client, url, writer, expect=403)
        assert data["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert (await get_json(client, f"/api/v1/tenants/{child['id']}/config/s", writer))[
        "value"
    ] == "***"
    # A key scoped to the child cannot see or write the root's entries (404, as if absent).
    scoped = await key_headers(client.app, ("read", "write", "admin"), tenant_id=child["id"])
    await get_json(client, f"/api/v1/tenants/{root['id']}/config", scoped, expect=404)
    resp = await client.put(
        f"/api/v1/tenants/{root['id']}/config/x", json={"value": 1}, headers=scoped
    )
    assert resp.status == 404
    revealed = await get_json(client, f"/api/v1/tenants/{child['id']}/config/s?reveal=true", scoped)
    assert revealed["value"] == "secret-value"


async def test_locked_keys_are_refused_below_but_not_at_the_owner(client, admin) -> None:
    root, mid, leaf = await create_chain(client, admin, 3)
    await put_config(client, admin, leaf["id"], "plan", "old-leaf", expect=201)
    await put_config(client, admin, mid["id"], "plan", "pro", expect=201, locked=True)
    # The owner changes its own locked entry; everything below is refused.
    await put_config(client, admin, mid["id"], "plan", "enterprise", expect=200)
    status, body = await put_config(client, admin, leaf["id"], "plan", "free")
    assert (status, body["error"]["code"]) == (409, "CONFIG_LOCKED")
    assert mid["id"] in body["error"]["message"]
    resp = await client.delete(f"/api/v1/tenants/{leaf['id']}/config/plan", headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (409, "CONFIG_LOCKED")
    resp = await client.patch(
        f"/api/v1/tenants/{leaf['id']}", json={"config": {"plan": "free"}}, headers=admin
    )
    assert (resp.status, (await resp.json())["error"]["code"]) == (409, "CONFIG_LOCKED")
    deeper = await create_tenant(
        client, admin, parent_id=leaf["id"], config={"plan": "x"}, expect=409
    )
    assert deeper["error"]["code"] == "CONFIG_LOCKED"
    # Above the lock nothing is refused; unlocking frees the key below.
    await put_config(client, admin, root["id"], "plan", "basic", expect=201)
    await put_config(client, admin, mid["id"], "plan", "pro", expect=200, locked=False)
    await put_config(client, admin, leaf["id"], "plan", "free", expect=200)


async def test_tenant_patch_config_merges_and_records(client, admin, db_conn) -> None:
    tid = (await create_tenant(client, admin, config={"ui": {"a": 1, "b": 2}, "gone": 1}))["id"]
    await put_config(client, admin, tid, "pw", "hunter2", expect=201, sensitive=True)
    resp = await client.patch(
        f"/api/v1/tenants/{tid}",
        json={"config": {"ui": {"b": None, "c": 3}, "gone": None, "pw": "hunter3"}},
        headers=admin,
    )
    body = await resp.json()
    assert resp.status == 200, body
    assert body["config"] == {"ui": {"a": 1, "c": 3}, "pw": "***"}
    events = [e for e in await events_of(db_conn, tid) if e[0] != "tenant.created"]
    assert [e[0] for e in events[-4:]] == [
        "tenant.updated", "config.updated", "config.deleted", "config.updated",
    ]  # fmt: skip
    assert events[-1][1]["value"] == "***"
    revealed = await get_json(client, f"/api/v1/tenants/{tid}/config/pw?reveal=true", admin)
    assert (revealed["value"], revealed["sensitive"]) == ("hunter3", True)
