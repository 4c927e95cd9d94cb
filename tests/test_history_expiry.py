"""Expiring entries in the history of the resolved view (migration 0046): an as-of read
shows expires_at as GET /context showed it then, an entry removed by its expiry is a
difference naming the expiry's revision and audit entry, a change of expiry alone is a
difference, and a revert puts an entry back with the expiry it had (one already past
expires again at the scheduler's next pass)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json
from tests.support.waiting import wait_until

LATER = "2100-01-01T00:00:00.000Z"
LATEST = "2100-06-01T12:30:00.250Z"


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    return fresh_db_url


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"SCHEDULER_POLL_SECONDS": "0.05"}


async def _put(client: TestClient, headers: dict[str, str], path: str, body: Any) -> int:
    resp = await client.put(path, json=body, headers=headers)
    assert resp.status in (200, 201), await resp.text()
    return int(resp.headers["X-Revision"])


async def _expired(db_conn: asyncpg.Connection, count: int) -> list[asyncpg.Record]:
    async def rows() -> list[asyncpg.Record]:
        return await db_conn.fetch(
            "SELECT id FROM audit_logs WHERE action = 'config.expired' ORDER BY created_at"
        )

    return await wait_until(rows, lambda r: len(r) == count)


async def test_expiry_in_as_of_diff_and_revert(
    client: TestClient, admin: dict[str, str], db_conn: asyncpg.Connection
) -> None:
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    cfg = f"/api/v1/tenants/{root['id']}/config/limit"
    perm = f"/api/v1/tenants/{root['id']}/permissions/beta"
    ctx = f"/api/v1/tenants/{child['id']}/context"
    soon = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    await _put(client, admin, cfg, {"value": 100, "expires_at": soon})
    with_both = await _put(client, admin, perm, {"value": True, "expires_at": LATER})
    recorded = await get_json(client, ctx, admin)
    assert "expires_at" in recorded["resolved_config"]["limit"]
    assert recorded["resolved_permissions"]["beta"]["expires_at"] == LATER

    # The scheduler removes the config entry at its expiry, with a revision of its own.
    [expiry_audit] = await _expired(db_conn, 1)
    expired_at = int(await db_conn.fetchval("SELECT max(revision) FROM context_revisions"))
    assert expired_at > with_both
    now = await get_json(client, ctx, admin)
    assert "limit" not in now["resolved_config"]
    assert await get_json(client, f"{ctx}?revision={with_both}", admin) == recorded

    # A change of expiry alone.
    moved_expiry = await _put(client, admin, perm, {"value": True, "expires_at": LATEST})
    diff = await get_json(client, f"{ctx}/diff?from={with_both}&to={moved_expiry}", admin)
    beta_before = recorded["resolved_permissions"]["beta"]
    assert diff == {
        "from": with_both,
        "to": moved_expiry,
        "config": [
            {
                "key": "limit", "change": "removed",
                "before": recorded["resolved_config"]["limit"], "after": None,
                "revision": expired_at, "audit_id": str(expiry_audit["id"]),
            }
        ],
        "permissions": [
            {
                "key": "beta", "change": "changed",
                "before": beta_before, "after": beta_before | {"expires_at": LATEST},
                "revision": moved_expiry, "audit_id": diff["permissions"][0]["audit_id"],
            }
        ],
    }  # fmt: skip

    # Reverting the change of expiry puts the earlier expiry back.
    resp = await client.post(f"/api/v1/revisions/{moved_expiry}/revert", headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["changes"] == [
        {
            "kind": "permission", "tenant_id": root["id"], "key": "beta",
            "restored": {"value": True, "mode": "INHERIT", "expires_at": LATER},
            "reverted": {"value": True, "mode": "INHERIT", "expires_at": LATEST},
            "later_revisions": [],
        }
    ]  # fmt: skip
    assert (await get_json(client, ctx, admin))["resolved_permissions"]["beta"] == beta_before

    # Reverting the expiry restores the entry with its expiry, already past: the
    # scheduler removes it again.
    resp = await client.post(f"/api/v1/revisions/{expired_at}/revert", headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    assert (
        body["changes"][0]["restored"]["expires_at"]
        == (recorded["resolved_config"]["limit"]["expires_at"])
    )
    await _expired(db_conn, 2)
    assert "limit" not in (await get_json(client, ctx, admin))["resolved_config"]
