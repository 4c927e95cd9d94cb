"""Consent records: grant (idempotent while active), history, revoke, expiry, audit."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json
from tests.support.gdpr import error_of
from tests.support.keys import key_headers, make_key

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def later(days: int = 30) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


async def grant(
    client: TestClient, headers: dict[str, str], tenant_id: str, expect: int = 201, **body: Any
) -> dict[str, Any]:
    resp = await client.post(f"/api/v1/tenants/{tenant_id}/consent", json=body, headers=headers)
    data: dict[str, Any] = await resp.json()
    assert resp.status == expect, data
    return data


async def test_grant_list_revoke_with_whole_bodies(client: TestClient, db_conn) -> None:
    issued = await make_key(client.app, ("read", "write"))
    headers = {"X-API-Key": issued.plaintext}
    actor = str(issued.key.id)
    tenant = await create_tenant(client, headers)
    tid = tenant["id"]
    expires = later()
    marketing = await grant(
        client, headers, tid, purpose="marketing.email", expires_at=expires,
        metadata={"source": "signup form", "version": 3},
    )  # fmt: skip
    assert TIMESTAMP.match(marketing["granted_at"])
    assert marketing == {
        "id": marketing["id"],
        "tenant_id": tid,
        "purpose": "marketing.email",
        "status": "granted",
        "granted_at": marketing["granted_at"],
        "granted_by": actor,
        "revoked_at": None,
        "revoked_by": None,
        "expires_at": expires,
        "metadata": {"source": "signup form", "version": 3},
    }
    # granting again while active answers the active record, 200, and records nothing
    again = await grant(client, headers, tid, expect=200, purpose="marketing.email")
    assert again == marketing
    analytics = await grant(client, headers, tid, purpose="analytics")
    assert analytics["expires_at"] is None
    assert analytics["metadata"] == {}

    path = f"/api/v1/tenants/{tid}/consent"
    assert await get_json(client, path, headers) == [analytics, marketing]
    assert await get_json(client, f"{path}?purpose=analytics", headers) == [analytics]
    assert await get_json(client, f"{path}?purpose=nothing", headers) == []

    resp = await client.delete(f"{path}/marketing.email", headers=headers)
    assert resp.status == 204
    [revoked] = await get_json(client, f"{path}?purpose=marketing.email", headers)
    assert TIMESTAMP.match(revoked["revoked_at"])
    assert revoked == {
        **marketing, "status": "revoked", "revoked_at": revoked["revoked_at"], "revoked_by": actor,
    }  # fmt: skip
    # revoking again: nothing active any more
    resp = await client.delete(f"{path}/marketing.email", headers=headers)
    assert await error_of(resp) == (404, "CONSENT_NOT_FOUND")
    # a new grant is a new record; history keeps both, newest first
    renewed = await grant(client, headers, tid, purpose="marketing.email")
    history = await get_json(client, f"{path}?purpose=marketing.email", headers)
    assert [c["id"] for c in history] == [renewed["id"], marketing["id"]]

    rows = await db_conn.fetch(
        "SELECT action, resource_type, resource_id, actor_id, changes FROM audit_logs "
        "WHERE tenant_id = $1 AND resource_type = 'consent' ORDER BY id",
        UUID(tid),
    )
    assert [(r["action"], r["resource_id"], r["actor_id"]) for r in rows] == [
        ("consent.granted", marketing["id"], actor),
        ("consent.granted", analytics["id"], actor),
        ("consent.revoked", marketing["id"], actor),
        ("consent.granted", renewed["id"], actor),
    ]
    assert rows[0]["changes"] == {"before": None, "after": marketing}
    assert rows[2]["changes"] == {
        "before": {"status": "granted"},
        "after": {"status": "revoked", "revoked_by": actor},
    }


async def test_an_expired_consent_is_not_active(client: TestClient, admin, db_conn) -> None:
    tenant = await create_tenant(client, admin)
    tid = tenant["id"]
    first = await grant(client, admin, tid, purpose="trial", expires_at=later(1))
    # time passes: the record's expiry lies behind us now
    await db_conn.execute(
        "UPDATE consents SET granted_at = now() - interval '3 days', "
        "expires_at = now() - interval '1 day' WHERE id = $1",
        UUID(first["id"]),
    )
    [expired] = await get_json(client, f"/api/v1/tenants/{tid}/consent", admin)
    assert expired["status"] == "expired"
    resp = await client.delete(f"/api/v1/tenants/{tid}/consent/trial", headers=admin)
    assert await error_of(resp) == (404, "CONSENT_NOT_FOUND")
    second = await grant(client, admin, tid, purpose="trial")  # 201: a new record
    statuses = [
        c["status"] for c in await get_json(client, f"/api/v1/tenants/{tid}/consent", admin)
    ]
    assert statuses == ["granted", "expired"]
    assert second["id"] != first["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "purpose"),
        ({"purpose": "Marketing"}, "purpose"),
        ({"purpose": "1st"}, "purpose"),
        ({"purpose": "a" * 65}, "purpose"),
        ({"purpose": "has space"}, "purpose"),
        ({"purpose": "ok\n"}, "purpose"),
        ({"purpose": "ok", "expires_at": "tomorrow"}, "expires_at"),
        ({"purpose": "ok", "expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
        ({"purpose": "ok", "expires_at": "2999-01-01T00:00:00"}, "expires_at"),
        ({"purpose": "ok", "expires_at": "9999-12-31T23:59:59-01:00"}, "expires_at"),
        ({"purpose": "ok", "metadata": []}, "metadata"),
        ({"purpose": "ok", "metadata": {"x": "nul\u0000"}}, "metadata"),
        ({"purpose": "ok", "metadata": {"x": "y" * 17_000}}, "metadata"),
        ({"purpose": "ok", "status": "revoked"}, "status"),
    ],
)
async def test_bad_grants_are_400(client: TestClient, admin, body: dict[str, Any], field: str):
    tenant = await create_tenant(client, admin)
    resp = await client.post(f"/api/v1/tenants/{tenant['id']}/consent", json=body, headers=admin)
    data = await resp.json()
    assert resp.status == 400, data
    assert data["error"]["code"] == "VALIDATION_ERROR"
    assert data["error"]["details"][0]["field"] == field


async def test_bad_purpose_in_path_or_query_is_400(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    path = f"/api/v1/tenants/{tenant['id']}/consent"
    for resp in (
        await client.delete(f"{path}/Not-Valid", headers=admin),
        await client.get(f"{path}?purpose=Not-Valid", headers=admin),
        await client.get(f"{path}?purposes=x", headers=admin),
    ):
        assert await error_of(resp) == (400, "VALIDATION_ERROR")


async def test_missing_archived_and_outside_tenants(client: TestClient, admin) -> None:
    root = await create_tenant(client, admin)
    mine = await create_tenant(client, admin, parent_id=root["id"])
    gone = await create_tenant(client, admin, parent_id=root["id"])
    assert (await client.delete(f"/api/v1/tenants/{gone['id']}", headers=admin)).status == 204
    scoped = await key_headers(client.app, ("read", "write"), tenant_id=mine["id"])
    await grant(client, scoped, mine["id"], purpose="inside")
    cases = [
        (admin, "00000000-0000-7000-8000-000000000000", (404, "TENANT_NOT_FOUND")),
        (admin, gone["id"], (410, "TENANT_ARCHIVED")),
        (scoped, root["id"], (404, "TENANT_NOT_FOUND")),
    ]
    for headers, tenant_id, expected in cases:
        path = f"/api/v1/tenants/{tenant_id}/consent"
        for resp in (
            await client.post(path, json={"purpose": "p"}, headers=headers),
            await client.get(path, headers=headers),
            await client.delete(f"{path}/p", headers=headers),
        ):
            assert await error_of(resp) == expected, (tenant_id, resp.method)


async def test_grant_and_revoke_need_write_listing_needs_read(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    path = f"/api/v1/tenants/{tenant['id']}/consent"
    reader = await key_headers(client.app, ("read",))
    resp = await client.post(path, json={"purpose": "p"}, headers=reader)
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    resp = await client.delete(f"{path}/p", headers=reader)
    assert await error_of(resp) == (403, "INSUFFICIENT_SCOPE")
    assert await get_json(client, path, reader) == []


async def test_concurrent_grants_create_one_record(client: TestClient, admin, db_conn) -> None:
    tenant = await create_tenant(client, admin)
    path = f"/api/v1/tenants/{tenant['id']}/consent"
    responses = await asyncio.gather(
        *(client.post(path, json={"purpose": "race"}, headers=admin) for _ in range(8))
    )
    statuses = sorted(r.status for r in responses)
    assert statuses == [200] * 7 + [201]
    bodies = [await r.json() for r in responses]
    assert len({b["id"] for b in bodies}) == 1
    count = await db_conn.fetchval(
        "SELECT count(*) FROM consents WHERE tenant_id = $1", UUID(tenant["id"])
    )
    assert count == 1
