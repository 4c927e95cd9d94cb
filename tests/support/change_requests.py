"""Helpers for change request tests."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

BASE = "/api/v1/change-requests"


async def call(
    client: TestClient, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    resp = await client.request(method, path, json=body, headers=headers)
    data = None if resp.status == 204 else await resp.json()
    return resp.status, data


async def propose(
    client: TestClient, headers: dict[str, str], changes: list[dict[str, Any]], **fields: Any
) -> dict[str, Any]:
    status, body = await call(
        client, "POST", BASE, headers, {"title": "t", "changes": changes, **fields}
    )
    assert status == 201, body
    return dict(body)


async def approve(
    client: TestClient, request_id: str, headers: dict[str, str], expect: int = 200
) -> dict[str, Any]:
    status, body = await call(client, "POST", f"{BASE}/{request_id}/approve", headers)
    assert status == expect, body
    return dict(body)


def config_set(tenant_id: str, key: str, value: Any, **extra: Any) -> dict[str, Any]:
    return {"op": "config.set", "tenant_id": tenant_id, "key": key, "value": value, **extra}
