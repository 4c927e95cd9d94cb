"""HTTP and row helpers for config entries, permission policies and the context."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp.test_utils import TestClient


async def put_config(
    client: TestClient,
    headers: dict[str, str],
    tenant_id: str,
    key: str,
    value: Any,
    *,
    expect: int | None = None,
    **flags: Any,
) -> tuple[int, Any]:
    resp = await client.put(
        f"/api/v1/tenants/{tenant_id}/config/{key}", json={"value": value, **flags}, headers=headers
    )
    data = await resp.json()
    if expect is not None:
        assert resp.status == expect, data
    return resp.status, data


async def put_permission(
    client: TestClient,
    headers: dict[str, str],
    tenant_id: str,
    key: str,
    value: bool,
    mode: str | None = None,
    *,
    expect: int | None = None,
) -> tuple[int, Any]:
    body: dict[str, Any] = {"value": value}
    if mode is not None:
        body["mode"] = mode
    resp = await client.put(
        f"/api/v1/tenants/{tenant_id}/permissions/{key}", json=body, headers=headers
    )
    data = await resp.json()
    if expect is not None:
        assert resp.status == expect, data
    return resp.status, data


async def context(
    client: TestClient, headers: dict[str, str], tenant_id: str, *, reveal: bool = False
) -> dict[str, Any]:
    suffix = "?reveal=true" if reveal else ""
    resp = await client.get(f"/api/v1/tenants/{tenant_id}/context{suffix}", headers=headers)
    data: dict[str, Any] = await resp.json()
    assert resp.status == 200, data
    return data


async def events_of(conn: asyncpg.Connection, tenant_id: str) -> list[tuple[str, Any]]:
    rows = await conn.fetch(
        "SELECT type, payload FROM events WHERE tenant_id = $1::uuid ORDER BY id", tenant_id
    )
    return [(r["type"], r["payload"]) for r in rows]


async def audits_of(conn: asyncpg.Connection, tenant_id: str) -> list[tuple[str, str, Any]]:
    rows = await conn.fetch(
        "SELECT action, resource_id, changes FROM audit_logs WHERE tenant_id = $1::uuid "
        "ORDER BY id",
        tenant_id,
    )
    return [(r["action"], r["resource_id"], r["changes"]) for r in rows]
