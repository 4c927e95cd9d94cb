"""Rows for audit, GDPR and retention tests: config, permissions and roles through their
endpoints. Webhooks and deliveries are stored directly, the way the service stores
them: the webhook API resolves its URL (no DNS in tests), and retention needs deliveries
with chosen statuses and times (a delivery without next_attempt_at is never claimed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
from aiohttp.test_utils import TestClient

from service.base.crypto import PURPOSE_WEBHOOK_SECRET, webhook_aad
from service.base.ids import uuid7
from service.http.appkeys import KEYRING


async def error_of(resp: Any) -> tuple[int, str]:
    return resp.status, (await resp.json())["error"]["code"]


async def add_sensitive_config(
    client: TestClient, headers: dict[str, str], tenant_id: str, key: str, value: Any
) -> None:
    resp = await client.put(
        f"/api/v1/tenants/{tenant_id}/config/{key}",
        json={"value": value, "sensitive": True},
        headers=headers,
    )
    assert resp.status == 201, await resp.json()


async def add_permission(
    client: TestClient,
    headers: dict[str, str],
    tenant_id: str,
    key: str,
    value: bool,
    mode: str = "INHERIT",
) -> None:
    resp = await client.put(
        f"/api/v1/tenants/{tenant_id}/permissions/{key}",
        json={"value": value, "mode": mode},
        headers=headers,
    )
    assert resp.status == 201, await resp.json()


async def add_webhook(
    client: TestClient,
    conn: asyncpg.Connection,
    tenant_id: str | None,
    *,
    secret: str = "whsec_test-secret",  # noqa: S107 - a test fixture value
    include_descendants: bool = False,
) -> UUID:
    webhook_id = uuid7()
    token = client.app[KEYRING].encryptor.encrypt(
        secret.encode(), purpose=PURPOSE_WEBHOOK_SECRET, aad=webhook_aad(webhook_id)
    )
    await conn.execute(
        "INSERT INTO webhooks (id, tenant_id, url, events, encrypted_secret, description, "
        "include_descendants) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        webhook_id, None if tenant_id is None else UUID(tenant_id),
        f"https://hooks.example.com/{webhook_id}", ["tenant.updated", "tenant.moved"], token,
        "test hook", include_descendants,
    )  # fmt: skip
    return webhook_id


async def add_delivery(
    conn: asyncpg.Connection,
    webhook_id: UUID,
    event_id: UUID,
    *,
    status: str = "success",
    updated_at: datetime | None = None,
) -> UUID:
    delivery_id = uuid7()
    await conn.execute(
        "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, status, "
        "max_attempts, updated_at) "
        "SELECT $1, $2, e.id, e.type, $4, 6, coalesce($5, now()) FROM events e WHERE e.id = $3",
        delivery_id, webhook_id, event_id, status, updated_at,
    )  # fmt: skip
    return delivery_id


async def add_role(
    client: TestClient,
    headers: dict[str, str],
    tenant_id: str | None,
    name: str,
    scopes: tuple[str, ...] = ("read",),
) -> str:
    resp = await client.post(
        "/api/v1/roles",
        json={"name": name, "scopes": list(scopes), "tenant_id": tenant_id},
        headers=headers,
    )
    body = await resp.json()
    assert resp.status == 201, body
    return str(body["id"])


async def assign_role(
    client: TestClient, headers: dict[str, str], key_id: object, role_id: str
) -> None:
    resp = await client.put(
        f"/api/v1/api-keys/{key_id}/role", json={"role_id": role_id}, headers=headers
    )
    assert resp.status == 200, await resp.json()


async def events_of(conn: asyncpg.Connection, tenant_id: str) -> list[asyncpg.Record]:
    return await conn.fetch(
        "SELECT id, type, payload FROM events WHERE tenant_id = $1 ORDER BY id", UUID(tenant_id)
    )
