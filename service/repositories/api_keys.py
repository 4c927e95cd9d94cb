"""API keys, stored by HMAC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: UUID
    tenant_id: UUID | None
    name: str
    prefix: str
    environment: str
    scopes: list[str]
    role_id: UUID | None
    rate_limit_max: int | None
    rate_limit_window: str | None
    rate_limit_window_seconds: int | None
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None
    rotated_from: UUID | None


@dataclass(frozen=True, slots=True)
class NewApiKey:
    id: UUID
    tenant_id: UUID | None
    name: str
    prefix: str
    key_hash: bytes
    environment: str
    scopes: list[str]
    role_id: UUID | None = None
    rate_limit_max: int | None = None
    rate_limit_window: str | None = None
    rate_limit_window_seconds: int | None = None
    expires_at: datetime | None = None
    rotated_from: UUID | None = None


@dataclass(frozen=True, slots=True)
class KeyCredentials:
    """What authentication needs to know about a key."""

    id: UUID
    tenant_id: UUID | None
    scopes: list[str]
    environment: str
    rate_limit_max: int | None
    rate_limit_window_seconds: int | None
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    role_scopes: list[str] | None


class ApiKeysRepository(Repository):
    _insert = NamedSql("insert_api_key")
    _for_auth = NamedSql("get_api_key_for_auth")
    _count = NamedSql("count_api_keys")
    _touch = NamedSql("touch_api_key")
    _lock_bootstrap = NamedSql("lock_key_bootstrap")

    async def insert_api_key(self, conn: asyncpg.Connection, key: NewApiKey) -> ApiKey:
        row = await conn.fetchrow(
            self._insert,
            key.id,
            key.tenant_id,
            key.name,
            key.prefix,
            key.key_hash,
            key.environment,
            key.scopes,
            key.role_id,
            key.rate_limit_max,
            key.rate_limit_window,
            key.rate_limit_window_seconds,
            key.expires_at,
            key.rotated_from,
        )
        assert row is not None
        return ApiKey(**row)

    async def get_api_key_for_auth(
        self, conn: asyncpg.Connection, key_hash: bytes
    ) -> KeyCredentials | None:
        row = await conn.fetchrow(self._for_auth, key_hash)
        return None if row is None else KeyCredentials(**row)

    async def count_api_keys(self, conn: asyncpg.Connection) -> int:
        return int(await conn.fetchval(self._count))

    async def touch_api_key(self, conn: asyncpg.Connection, key_id: UUID) -> None:
        await conn.execute(self._touch, key_id)

    async def lock_key_bootstrap(self, conn: asyncpg.Connection) -> None:
        await conn.execute(self._lock_bootstrap)
