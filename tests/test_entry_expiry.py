"""Expiring overrides: config entries and permission policies with expires_at are shown
with it and removed at that time by the service, exactly once across processes, with
a delete event, an audit entry naming the expiry and a revision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant
from tests.support.keys import key_headers
from tests.support.waiting import wait_until


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"SCHEDULER_POLL_SECONDS": "0.05"}


def soon(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def test_expires_at_is_shown_then_the_entry_goes(
    client: TestClient, admin: dict[str, str], db_conn: asyncpg.Connection
) -> None:
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    at = soon(1.5)
    resp = await client.put(
        f"/api/v1/tenants/{root['id']}/config/limit",
        json={"value": 100, "expires_at": at},
        headers=admin,
    )
    body = await resp.json()
    assert resp.status == 201, body
    shown = datetime.fromisoformat(at).astimezone(UTC)
    iso = shown.strftime("%Y-%m-%dT%H:%M:%S.") + f"{shown.microsecond // 1000:03d}Z"
    assert body["expires_at"] == iso
    resp = await client.put(
        f"/api/v1/tenants/{root['id']}/permissions/beta",
        json={"value": True, "expires_at": at},
        headers=admin,
    )
    assert resp.status == 201
    assert (await resp.json())["expires_at"] == iso
    context = await (
        await client.get(f"/api/v1/tenants/{child['id']}/context", headers=admin)
    ).json()
    assert context["resolved_config"]["limit"]["expires_at"] == iso
    assert context["resolved_permissions"]["beta"]["expires_at"] == iso
    revealed = await (
        await client.get(f"/api/v1/tenants/{child['id']}/context?reveal=true", headers=admin)
    ).json()
    assert revealed["resolved_config"]["limit"]["expires_at"] == iso

    async def audit() -> list[asyncpg.Record]:
        return await db_conn.fetch(
            "SELECT action, actor_id, resource_id, changes FROM audit_logs"
            " WHERE tenant_id = $1 AND action LIKE '%.expired' ORDER BY action",
            UUID(root["id"]),
        )

    rows = await wait_until(audit, lambda r: len(r) == 2)
    assert [(r["action"], r["actor_id"], r["resource_id"]) for r in rows] == [
        ("config.expired", "system", "limit"),
        ("permission.expired", "system", "beta"),
    ]
    events = await db_conn.fetch(
        "SELECT type, payload FROM events WHERE tenant_id = $1 AND type LIKE '%.deleted'"
        " ORDER BY type",
        UUID(root["id"]),
    )
    assert [e["type"] for e in events] == ["config.deleted", "permission.deleted"]
    context = await (
        await client.get(f"/api/v1/tenants/{child['id']}/context", headers=admin)
    ).json()
    assert context["resolved_config"] == {}
    assert context["resolved_permissions"] == {}
    # The expiry committed as a revision of its own, logging the tenants it changed.
    logged = await db_conn.fetchval(
        "SELECT count(*) FROM context_revision_tenants r JOIN context_revisions v"
        " USING (revision) WHERE $2 = ANY(v.audit_ids)"
        " AND (r.tenant_id = $1 OR $1 = ANY(r.members))",  # its own row, or in a group
        UUID(child["id"]),
        await db_conn.fetchval(
            "SELECT id FROM audit_logs WHERE action = 'config.expired' AND tenant_id = $1",
            UUID(root["id"]),
        ),
    )
    assert logged == 1


async def test_expires_at_must_lie_in_the_future(client: TestClient, admin: dict[str, str]) -> None:
    root = await create_tenant(client, admin)
    for path, body in [
        ("config/k", {"value": 1, "expires_at": soon(-5)}),
        ("permissions/k", {"value": True, "expires_at": soon(-5)}),
        ("config/k", {"value": 1, "expires_at": "2030-01-01T00:00:00"}),
    ]:
        resp = await client.put(f"/api/v1/tenants/{root['id']}/{path}", json=body, headers=admin)
        assert resp.status == 400, body
        assert (await resp.json())["error"]["code"] == "VALIDATION_ERROR"


async def test_a_put_without_expires_at_keeps_the_entry(
    client: TestClient, admin: dict[str, str]
) -> None:
    root = await create_tenant(client, admin)
    url = f"/api/v1/tenants/{root['id']}/config/k"
    resp = await client.put(url, json={"value": 1, "expires_at": soon(3600)}, headers=admin)
    assert resp.status == 201
    resp = await client.put(url, json={"value": 1}, headers=admin)
    assert resp.status == 200
    assert "expires_at" not in await resp.json()


async def test_two_processes_expire_each_entry_once(
    fresh_db_url: str, tmp_path: Path, aiohttp_client: Any
) -> None:
    settings = Settings.from_env(base_env(fresh_db_url, tmp_path, SCHEDULER_POLL_SECONDS="0.02"))
    first: TestClient = await aiohttp_client(create_app(settings))
    second: TestClient = await aiohttp_client(create_app(settings))
    headers = await key_headers(first.app)
    root = await create_tenant(first, headers)
    for i in range(30):
        client = first if i % 2 else second
        # Each write's own expiry: on a loaded machine the 60 writes took longer than a
        # shared one left them (a past expires_at is a 400).
        resp = await client.put(
            f"/api/v1/tenants/{root['id']}/config/k{i}",
            json={"value": i, "expires_at": soon(4.0)},
            headers=headers,
        )
        assert resp.status == 201
        resp = await client.put(
            f"/api/v1/tenants/{root['id']}/permissions/p{i}",
            json={"value": True, "expires_at": soon(4.0)},
            headers=headers,
        )
        assert resp.status == 201
    conn = await asyncpg.connect(fresh_db_url)
    try:

        async def left() -> int:
            return int(
                await conn.fetchval(
                    "SELECT (SELECT count(*) FROM config_entries WHERE tenant_id = $1)"
                    " + (SELECT count(*) FROM permission_policies WHERE tenant_id = $1)",
                    UUID(root["id"]),
                )
            )

        await wait_until(left, lambda n: n == 0)
        audits = await conn.fetch(
            "SELECT action, count(*) AS n, count(DISTINCT resource_id) AS keys FROM audit_logs"
            " WHERE action LIKE '%.expired' GROUP BY action ORDER BY action"
        )
        assert [tuple(a) for a in audits] == [
            ("config.expired", 30, 30),
            ("permission.expired", 30, 30),
        ]
        events = await conn.fetch(
            "SELECT type, count(*) AS n FROM events WHERE type LIKE '%.deleted'"
            " GROUP BY type ORDER BY type"
        )
        assert [tuple(e) for e in events] == [("config.deleted", 30), ("permission.deleted", 30)]
    finally:
        await conn.close()
