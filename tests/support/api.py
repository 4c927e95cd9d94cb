"""Short HTTP helpers for the tenant API."""

from __future__ import annotations

import secrets
from typing import Any

from aiohttp.test_utils import TestClient


def unique_slug(prefix: str = "t") -> str:
    return f"{prefix}_{secrets.token_hex(6)}"


async def create_tenant(
    client: TestClient,
    headers: dict[str, str],
    *,
    parent_id: str | None = None,
    expect: int = 201,
    **fields: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": fields.pop("name", "Tenant"), "slug": fields.pop("slug", None)}
    body["slug"] = body["slug"] or unique_slug()
    if parent_id is not None:
        body["parent_id"] = parent_id
    body.update(fields)
    resp = await client.post("/api/v1/tenants", json=body, headers=headers)
    data: dict[str, Any] = await resp.json()
    assert resp.status == expect, data
    return data


async def create_chain(
    client: TestClient, headers: dict[str, str], length: int, parent_id: str | None = None
) -> list[dict[str, Any]]:
    chain: list[dict[str, Any]] = []
    for _ in range(length):
        chain.append(await create_tenant(client, headers, parent_id=parent_id))
        parent_id = chain[-1]["id"]
    return chain


async def get_json(
    client: TestClient, path: str, headers: dict[str, str], expect: int = 200, **kw: Any
) -> Any:
    resp = await client.get(path, headers=headers, **kw)
    data = await resp.json()
    assert resp.status == expect, data
    return data


async def move(
    client: TestClient, headers: dict[str, str], tenant_id: str, new_parent: str | None
) -> tuple[int, Any]:
    resp = await client.post(
        f"/api/v1/tenants/{tenant_id}/move", json={"new_parent_id": new_parent}, headers=headers
    )
    return resp.status, await resp.json()
