"""Change requests: the state machine and its refusals, the impact preview, atomic
apply with one revision, audit entries and events, protected subtrees."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import asyncpg
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant
from tests.support.change_requests import BASE, approve, call, config_set, propose
from tests.support.keys import key_headers


async def _keys(client: TestClient) -> tuple[dict[str, str], dict[str, str]]:
    return (
        await key_headers(client.app, ("read", "write"), name="author"),
        await key_headers(client.app, ("read", "write"), name="reviewer"),
    )


async def test_the_state_machine_with_its_refusals(
    client: TestClient, admin: dict[str, str], db_conn: asyncpg.Connection
) -> None:
    author, reviewer = await _keys(client)
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    other = await create_tenant(client, admin)
    changes = [
        config_set(root["id"], "limit", 500),
        {"op": "permission.set", "tenant_id": child["id"], "key": "beta", "value": True},
        {"op": "tenant.update", "tenant_id": other["id"], "name": "Renamed"},
    ]
    created = await propose(client, author, changes, description="lift the limit")
    assert created["state"] == "pending_approval"
    assert created["changes"] == changes
    assert created["approvals"] == 0
    assert created["approvals_required"] == 1
    assert created["revision"] is None
    assert created["impact_digest"].startswith("sha256:")
    root_entry = {"key": "limit", "value": 500, "source_tenant_id": root["id"],
                  "inherited": False, "locked": False}  # fmt: skip
    child_entry = {**root_entry, "inherited": True}
    beta = {"key": "beta", "value": True, "mode": "INHERIT", "source_tenant_id": child["id"],
            "locked": False, "delegated": False}  # fmt: skip
    assert sorted(created["impact"], key=lambda e: e["tenant_id"]) == sorted(
        [
            {"tenant_id": root["id"], "config": {"limit": {"before": None, "after": root_entry}}},
            {
                "tenant_id": child["id"],
                "config": {"limit": {"before": None, "after": child_entry}},
                "permissions": {"beta": {"before": None, "after": beta}},
            },
        ],
        key=lambda e: e["tenant_id"],
    )
    # The preview changed nothing.
    context = await (
        await client.get(f"/api/v1/tenants/{child['id']}/context", headers=admin)
    ).json()
    assert context["resolved_config"] == {}
    cr = created["id"]

    # Applying before approval, approving one's own request: refused.
    status, body = await call(client, "POST", f"{BASE}/{cr}/apply", reviewer)
    assert (status, body["error"]["code"]) == (409, "CHANGE_REQUEST_STATE")
    status, body = await call(client, "POST", f"{BASE}/{cr}/approve", author)
    assert (status, body["error"]["code"]) == (403, "SELF_APPROVAL")

    approved = await approve(client, cr, reviewer)
    assert approved["state"] == "approved"
    assert approved["approvals"] == 1
    assert [(r["verdict"], r["round"]) for r in approved["reviews"]] == [("approved", 1)]
    status, body = await call(client, "POST", f"{BASE}/{cr}/approve", admin)
    assert (status, body["error"]["code"]) == (409, "CHANGE_REQUEST_STATE")

    status, applied = await call(client, "POST", f"{BASE}/{cr}/apply", author)
    assert status == 200, applied
    assert applied["state"] == "applied"
    assert isinstance(applied["revision"], int)
    context = await (
        await client.get(f"/api/v1/tenants/{child['id']}/context", headers=admin)
    ).json()
    assert context["resolved_config"]["limit"]["value"] == 500
    status, body = await call(client, "POST", f"{BASE}/{cr}/apply", author)
    assert (status, body["error"]["code"]) == (409, "CHANGE_REQUEST_STATE")
    status, body = await call(client, "POST", f"{BASE}/{cr}/cancel", author)
    assert (status, body["error"]["code"]) == (409, "CHANGE_REQUEST_STATE")

    # One audit entry per change plus one per transition of the request, and the whole
    # list in one revision.
    per_change = await db_conn.fetch(
        "SELECT id, action FROM audit_logs WHERE tenant_id = ANY($1::uuid[])"
        " AND action IN ('config.updated', 'permission.created', 'tenant.updated')",
        [UUID(root["id"]), UUID(child["id"]), UUID(other["id"])],
    )
    assert sorted(r["action"] for r in per_change) == [
        "config.updated", "permission.created", "tenant.updated",
    ]  # fmt: skip
    transitions = await db_conn.fetch(
        "SELECT id, action FROM audit_logs WHERE resource_type = 'change_request'"
        " AND resource_id = $1 ORDER BY id",
        cr,
    )
    assert [t["action"] for t in transitions] == [
        "change_request.created", "change_request.approved", "change_request.applied",
    ]  # fmt: skip
    ids = [r["id"] for r in per_change] + [transitions[-1]["id"]]
    revisions = await db_conn.fetch(
        "SELECT revision FROM context_revisions WHERE audit_ids && $1::uuid[]", ids
    )
    assert [r["revision"] for r in revisions] == [applied["revision"]]
    events = await db_conn.fetch(
        "SELECT type, payload FROM events WHERE type LIKE 'change_request.%' ORDER BY id"
    )
    assert [e["type"] for e in events] == [
        "change_request.created", "change_request.approved", "change_request.applied",
    ]  # fmt: skip

    # GET, and lists filtered by state and author, in keyset pages.
    status, got = await call(client, "GET", f"{BASE}/{cr}", reviewer)
    assert status == 200
    assert got == applied
    second = await propose(client, author, [config_set(other["id"], "k", 1)])
    third = await propose(client, reviewer, [config_set(other["id"], "k", 2)])
    status, rejected = await call(
        client, "POST", f"{BASE}/{second['id']}/reject", reviewer, {"comment": "not now"}
    )
    assert status == 200
    assert rejected["state"] == "rejected"
    assert rejected["reviews"][0]["comment"] == "not now"
    status, cancelled = await call(client, "POST", f"{BASE}/{third['id']}/cancel", reviewer)
    assert (status, cancelled["state"]) == (200, "cancelled")
    resp = await client.get(f"{BASE}?limit=1", headers=admin)
    page = await resp.json()
    assert [r["id"] for r in page["data"]] == [third["id"]]
    assert resp.headers["X-Next-Cursor"] == third["id"]
    resp = await client.get(f"{BASE}?limit=5&cursor={third['id']}", headers=admin)
    assert [r["id"] for r in (await resp.json())["data"]] == [second["id"], cr]
    author_id = created["author"]["id"]
    resp = await client.get(f"{BASE}?author={author_id}", headers=admin)
    assert [r["id"] for r in (await resp.json())["data"]] == [second["id"], cr]
    resp = await client.get(f"{BASE}?state=rejected", headers=admin)
    assert [r["id"] for r in (await resp.json())["data"]] == [second["id"]]


async def test_a_scoped_key_approves_only_inside_its_subtree(
    client: TestClient, admin: dict[str, str]
) -> None:
    root = await create_tenant(client, admin)
    left = await create_tenant(client, admin, parent_id=root["id"])
    right = await create_tenant(client, admin, parent_id=root["id"])
    author = await key_headers(client.app, ("read", "write"), name="author")
    scoped = await key_headers(client.app, ("read", "write"), tenant_id=left["id"])
    both = await propose(
        client, author, [config_set(left["id"], "k", 1), config_set(right["id"], "k", 1)]
    )
    status, body = await call(client, "POST", f"{BASE}/{both['id']}/approve", scoped)
    assert (status, body["error"]["code"]) == (404, "CHANGE_REQUEST_NOT_FOUND")
    status, body = await call(client, "GET", f"{BASE}/{both['id']}", scoped)
    assert status == 404
    inside = await propose(client, author, [config_set(left["id"], "k", 1)])
    assert (await approve(client, inside["id"], scoped))["state"] == "approved"
    resp = await client.get(BASE, headers=scoped)
    assert [r["id"] for r in (await resp.json())["data"]] == [inside["id"]]


async def test_the_whole_list_is_atomic(
    client: TestClient, admin: dict[str, str], db_conn: asyncpg.Connection
) -> None:
    author, reviewer = await _keys(client)
    root = await create_tenant(client, admin)
    first = await create_tenant(client, admin, parent_id=root["id"])
    second = await create_tenant(client, admin, parent_id=root["id"])
    cr = await propose(
        client, author, [config_set(first["id"], "x", 1), config_set(second["id"], "y", 2)]
    )
    await approve(client, cr["id"], reviewer)
    # The root locks y after approval: the second change now fails.
    resp = await client.put(
        f"/api/v1/tenants/{root['id']}/config/y", json={"value": 0, "locked": True}, headers=admin
    )
    assert resp.status == 201
    status, body = await call(client, "POST", f"{BASE}/{cr['id']}/apply", author)
    assert (status, body["error"]["code"]) == (409, "CONFIG_LOCKED")
    assert body["error"]["details"][0]["field"] == "changes[1]"
    # Nothing of the list was kept; the request failed visibly.
    left = await db_conn.fetchval(
        "SELECT count(*) FROM config_entries WHERE tenant_id = $1 AND key = 'x'",
        UUID(first["id"]),
    )
    assert left == 0
    status, failed = await call(client, "GET", f"{BASE}/{cr['id']}", author)
    assert failed["state"] == "failed"
    assert failed["error"]["code"] == "CONFIG_LOCKED"
    events = await db_conn.fetch(
        "SELECT type FROM events WHERE type LIKE 'change_request.%' ORDER BY id"
    )
    assert [e["type"] for e in events][-1] == "change_request.failed"


async def test_changes_in_a_protected_subtree_go_through_requests(
    client: TestClient, admin: dict[str, str]
) -> None:
    author, reviewer = await _keys(client)
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    assert (await client.post(f"/api/v1/tenants/{root['id']}/protect", headers=admin)).status == 200
    resp = await client.put(
        f"/api/v1/tenants/{child['id']}/config/k", json={"value": 1}, headers=author
    )
    assert (resp.status, (await resp.json())["error"]["code"]) == (409, "CHANGE_REQUEST_REQUIRED")
    cr = await propose(client, author, [config_set(child["id"], "k", 1)])
    await approve(client, cr["id"], reviewer)
    status, body = await call(client, "POST", f"{BASE}/{cr['id']}/apply", author)
    assert (status, body["state"]) == (200, "applied")
    entry = await (
        await client.get(f"/api/v1/tenants/{child['id']}/config/k", headers=admin)
    ).json()
    assert entry["value"] == 1


async def test_a_request_with_expiring_entries(client: TestClient, admin: dict[str, str]) -> None:
    author, reviewer = await _keys(client)
    root = await create_tenant(client, admin)
    cr = await propose(
        client, author, [config_set(root["id"], "limit", 9, expires_at="2099-01-01T00:00:00Z")]
    )
    await approve(client, cr["id"], reviewer)
    status, _ = await call(client, "POST", f"{BASE}/{cr['id']}/apply", author)
    assert status == 200
    entry = await (
        await client.get(f"/api/v1/tenants/{root['id']}/config/limit", headers=admin)
    ).json()
    assert entry["expires_at"] == "2099-01-01T00:00:00.000Z"


async def test_bad_requests_are_refused(client: TestClient, admin: dict[str, str]) -> None:
    root = await create_tenant(client, admin)
    bad: list[Any] = [
        {"title": "t", "changes": []},
        {"title": "t", "changes": [{"op": "config.explode", "tenant_id": root["id"]}]},
        {
            "title": "t",
            "changes": [config_set(root["id"], "k", 1, expires_at="2000-01-01T00:00:00Z")],
        },
    ]
    for body in bad:
        status, answer = await call(client, "POST", BASE, admin, body)
        assert (status, answer["error"]["code"]) == (400, "VALIDATION_ERROR"), body
    status, answer = await call(
        client, "POST", BASE, admin,
        {"title": "t", "changes": [{"op": "config.delete", "tenant_id": root["id"], "key": "no"}]},
    )  # fmt: skip
    assert (status, answer["error"]["code"]) == (404, "CONFIG_NOT_FOUND")


async def test_idempotent_create_and_apply(client: TestClient, admin: dict[str, str]) -> None:
    author, reviewer = await _keys(client)
    root = await create_tenant(client, admin)
    body = {"title": "t", "changes": [config_set(root["id"], "k", 1)]}
    first = await client.post(BASE, json=body, headers={**author, "Idempotency-Key": "cr-1"})
    again = await client.post(BASE, json=body, headers={**author, "Idempotency-Key": "cr-1"})
    assert (first.status, again.status) == (201, 201)
    created = await first.json()
    assert (await again.json())["id"] == created["id"]
    await approve(client, created["id"], reviewer)
    headers = {**author, "Idempotency-Key": "apply-1"}
    resp = await client.post(f"{BASE}/{created['id']}/apply", headers=headers)
    applied = await resp.json()
    assert (resp.status, applied["state"]) == (200, "applied"), applied
    resp = await client.post(f"{BASE}/{created['id']}/apply", headers=headers)
    assert resp.status == 200
    assert await resp.json() == applied
