"""Regions: the configured list, and migrating a tenant (and its subtree) to another one."""

from __future__ import annotations

from uuid import UUID

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json
from tests.support.gdpr import error_of
from tests.support.keys import key_headers, make_key


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"SERVICE_REGIONS": "eu-west, us-east,ap-south", "DEFAULT_REGION": "eu-west"}


async def migrate(
    client: TestClient, headers: dict[str, str], tenant_id: str, **body: object
) -> tuple[int, dict[str, object]]:
    resp = await client.post(
        f"/api/v1/tenants/{tenant_id}/migrate-region", json=body, headers=headers
    )
    return resp.status, await resp.json()


async def test_regions_lists_the_configured_regions(client: TestClient, admin) -> None:
    assert await get_json(client, "/api/v1/regions", admin) == [
        {"name": "eu-west", "default": True},
        {"name": "us-east", "default": False},
        {"name": "ap-south", "default": False},
    ]
    reader = await key_headers(client.app, ("read",))
    assert await error_of(await client.get("/api/v1/regions", headers=reader)) == (
        403, "INSUFFICIENT_SCOPE",
    )  # fmt: skip


async def test_migrating_a_subtree_emits_updates_and_one_audit_entry(client, db_conn) -> None:
    issued = await make_key(client.app)
    admin = {"X-API-Key": issued.plaintext}
    root = await create_tenant(client, admin)
    tenant = await create_tenant(client, admin, parent_id=root["id"])
    child = await create_tenant(client, admin, parent_id=tenant["id"])
    archived = await create_tenant(client, admin, parent_id=tenant["id"])
    assert (await client.delete(f"/api/v1/tenants/{archived['id']}", headers=admin)).ok
    grandchild = await create_tenant(client, admin, parent_id=child["id"])
    assert tenant["region"] == "eu-west"
    # one descendant already lives in the target region: it is left alone
    status, body = await migrate(client, admin, grandchild["id"], region="us-east")
    assert (status, body["tenants_migrated"]) == (200, 1)
    before = await db_conn.fetchval("SELECT id FROM events ORDER BY id DESC LIMIT 1")

    status, body = await migrate(client, admin, tenant["id"], region="us-east")
    assert (status, body) == (200, {
        "tenant_id": tenant["id"], "from_region": "eu-west", "to_region": "us-east",
        "tenants_migrated": 3,
    })  # fmt: skip
    for t in (tenant, child, archived, grandchild):
        got = await get_json(client, f"/api/v1/tenants/{t['id']}?include_archived=true", admin)
        assert got["region"] == "us-east", t
    assert (await get_json(client, f"/api/v1/tenants/{root['id']}", admin))["region"] == "eu-west"
    events = await db_conn.fetch(
        "SELECT type, tenant_id, payload FROM events WHERE id > $1 ORDER BY id", before
    )
    # one tenant.updated per migrated tenant, in pre-order; the grandchild did not change
    assert [(e["type"], str(e["tenant_id"])) for e in events] == [
        ("tenant.updated", tenant["id"]),
        ("tenant.updated", child["id"]),
        ("tenant.updated", archived["id"]),
    ]
    for event in events:
        current = await get_json(
            client, f"/api/v1/tenants/{event['tenant_id']}?include_archived=true", admin
        )
        assert event["payload"] == {**current, "changed_fields": ["region"]}
    [entry] = await get_json(
        client, f"/api/v1/audit-logs?tenant_id={tenant['id']}&action=tenant.region_migrated", admin
    )
    assert (entry["actor_id"], entry["resource_type"], entry["resource_id"]) == (
        str(issued.key.id), "tenant", tenant["id"],
    )  # fmt: skip
    assert entry["changes"] == {
        "before": {"region": "eu-west"}, "after": {"region": "us-east"},
        "include_descendants": True, "tenants_migrated": 3,
    }  # fmt: skip
    # a child created now inherits the new region
    newcomer = await create_tenant(client, admin, parent_id=child["id"])
    assert newcomer["region"] == "us-east"


async def test_without_descendants_only_the_tenant_moves(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=tenant["id"])
    status, body = await migrate(
        client, admin, tenant["id"], region="ap-south", include_descendants=False
    )
    assert (status, body["tenants_migrated"]) == (200, 1)
    assert (await get_json(client, f"/api/v1/tenants/{child['id']}", admin))["region"] == "eu-west"


async def test_migration_errors(client: TestClient, admin, db_conn) -> None:
    root = await create_tenant(client, admin)
    mine = await create_tenant(client, admin, parent_id=root["id"])
    gone = await create_tenant(client, admin, parent_id=root["id"])
    assert (await client.delete(f"/api/v1/tenants/{gone['id']}", headers=admin)).ok
    count = await db_conn.fetchval("SELECT count(*) FROM audit_logs")
    status, body = await migrate(client, admin, mine["id"], region="mars-1")
    assert (status, body["error"]["code"]) == (400, "VALIDATION_ERROR")
    assert body["error"]["details"] == [
        {"field": "region", "message": "unknown region; one of eu-west, us-east, ap-south"}
    ]
    status, body = await migrate(client, admin, mine["id"], region="eu-west")
    assert (status, body["error"]["code"]) == (409, "ALREADY_IN_REGION")
    status, body = await migrate(client, admin, gone["id"], region="us-east")
    assert (status, body["error"]["code"]) == (410, "TENANT_ARCHIVED")
    for bad in ({}, {"region": 3}, {"region": "us-east", "include_descendants": "no"},
                {"region": "us-east", "cascade": True}):  # fmt: skip
        status, body = await migrate(client, admin, mine["id"], **bad)
        assert (status, body["error"]["code"]) == (400, "VALIDATION_ERROR"), bad
    scoped = await key_headers(client.app, ("read", "admin"), tenant_id=mine["id"])
    status, body = await migrate(client, scoped, root["id"], region="us-east")
    assert (status, body["error"]["code"]) == (404, "TENANT_NOT_FOUND")
    writer = await key_headers(client.app, ("read", "write"))
    status, body = await migrate(client, writer, mine["id"], region="us-east")
    assert (status, body["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")
    # nothing above changed anything (key creation is audited by the system actor)
    actions = await db_conn.fetch("SELECT action FROM audit_logs ORDER BY id OFFSET $1", count)
    assert {a["action"] for a in actions} <= {"api_key.created"}
    assert (await get_json(client, f"/api/v1/tenants/{mine['id']}", admin))["region"] == "eu-west"
    status, body = await migrate(client, scoped, mine["id"], region="us-east")
    assert (status, body["tenant_id"]) == (200, mine["id"])
    assert UUID(body["tenant_id"])
