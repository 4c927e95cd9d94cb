"""API keys, stored by HMAC."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class ApiKeyRow:
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


_KEY_FIELDS = tuple(f.name for f in fields(ApiKeyRow))


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A key as requests see it: with its role's scopes and its tenant's ancestry path."""

    key: ApiKeyRow
    role_scopes: list[str] | None
    tenant_path: str | None

    @property
    def effective_scopes(self) -> list[str]:
        return self.role_scopes if self.role_scopes is not None else self.key.scopes


def _stored(row: asyncpg.Record) -> StoredKey:
    key = ApiKeyRow(**{name: row[name] for name in _KEY_FIELDS})
    return StoredKey(key, row["role_scopes"], row["tenant_path"])


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
class KeySettings:
    """What PATCH may change."""

    name: str
    scopes: list[str]
    rate_limit_max: int | None
    rate_limit_window: str | None
    rate_limit_window_seconds: int | None
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class KeyCredentials:
    """What authentication needs to know about a key."""

    id: UUID
    tenant_id: UUID | None
    scopes: list[str]
    role_id: UUID | None
    environment: str
    rate_limit_max: int | None
    rate_limit_window_seconds: int | None
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    role_scopes: list[str] | None


@dataclass(frozen=True, slots=True)
class HolderLimits:
    """The expiry and rate limit of a key holding a role."""

    id: UUID
    expires_at: datetime | None
    rate_limit_max: int | None
    rate_limit_window_seconds: int | None


@dataclass(frozen=True, slots=True)
class StrandedKey:
    """A key a move would take out of the subtree of the tenant owning its role."""

    api_key_id: UUID
    role_id: UUID
    role_tenant_id: UUID


class ApiKeysRepository(Repository):
    _insert = NamedSql("insert_api_key")
    _get = NamedSql("get_api_key")
    _lock = NamedSql("lock_api_key")
    _list = NamedSql("list_api_keys")
    _dormant = NamedSql("list_dormant_api_keys")
    _update = NamedSql("update_api_key")
    _revoke = NamedSql("revoke_api_key")
    _set_role = NamedSql("set_api_key_role")
    _with_role = NamedSql("list_api_keys_with_role")
    _for_auth = NamedSql("get_api_key_for_auth")
    _count = NamedSql("count_api_keys")
    _touch = NamedSql("touch_api_keys")
    _lock_bootstrap = NamedSql("lock_key_bootstrap")
    _limits_with_role = NamedSql("list_api_key_limits_with_role")
    _leaving = NamedSql("list_api_keys_leaving_role_subtree")
    _outside = NamedSql("count_api_keys_outside_role_subtree")

    async def insert_api_key(self, conn: asyncpg.Connection, key: NewApiKey) -> ApiKeyRow:
        row = await self._insert.one(
            conn,
            key_id=key.id,
            tenant_id=key.tenant_id,
            name=key.name,
            prefix=key.prefix,
            key_hash=key.key_hash,
            environment=key.environment,
            scopes=key.scopes,
            role_id=key.role_id,
            rate_limit_max=key.rate_limit_max,
            rate_limit_window=key.rate_limit_window,
            rate_limit_window_seconds=key.rate_limit_window_seconds,
            expires_at=key.expires_at,
            rotated_from=key.rotated_from,
        )
        assert row is not None
        return ApiKeyRow(**row)

    async def get_api_key(self, conn: asyncpg.Connection, key_id: UUID) -> StoredKey | None:
        row = await self._get.one(conn, key_id=key_id)
        return None if row is None else _stored(row)

    async def lock_api_key(self, conn: asyncpg.Connection, key_id: UUID) -> StoredKey | None:
        row = await self._lock.one(conn, key_id=key_id)
        return None if row is None else _stored(row)

    async def list_api_keys(
        self,
        conn: asyncpg.Connection,
        *,
        tenant_id: UUID | None,
        subtree_of: UUID | None,
        include_revoked: bool,
        cursor: UUID | None,
        limit: int,
    ) -> list[StoredKey]:
        rows = await self._list.many(
            conn,
            tenant_id=tenant_id,
            subtree_root_id=subtree_of,
            include_revoked=include_revoked,
            cursor_id=cursor,
            page_size=limit,
        )
        return [_stored(r) for r in rows]

    async def list_dormant_api_keys(
        self, conn: asyncpg.Connection, *, days: int, subtree_of: UUID | None
    ) -> list[StoredKey]:
        return [
            _stored(r)
            for r in await self._dormant.many(conn, dormant_days=days, subtree_root_id=subtree_of)
        ]

    async def update_api_key(
        self, conn: asyncpg.Connection, key_id: UUID, settings: KeySettings
    ) -> None:
        await self._update.exec(
            conn,
            key_id=key_id,
            name=settings.name,
            scopes=settings.scopes,
            rate_limit_max=settings.rate_limit_max,
            rate_limit_window=settings.rate_limit_window,
            rate_limit_window_seconds=settings.rate_limit_window_seconds,
            expires_at=settings.expires_at,
        )

    async def revoke_api_key(
        self, conn: asyncpg.Connection, key_id: UUID, *, after_seconds: int = 0
    ) -> datetime:
        revoked_at: datetime = await self._revoke.value(
            conn, key_id=key_id, grace_seconds=float(after_seconds)
        )
        return revoked_at

    async def set_api_key_role(
        self, conn: asyncpg.Connection, key_id: UUID, role_id: UUID | None
    ) -> None:
        await self._set_role.exec(conn, key_id=key_id, role_id=role_id)

    async def list_api_keys_with_role(
        self, conn: asyncpg.Connection, role_id: UUID
    ) -> list[tuple[UUID, list[str]]]:
        return [
            (r["id"], list(r["scopes"])) for r in await self._with_role.many(conn, role_id=role_id)
        ]

    async def list_api_key_limits_with_role(
        self, conn: asyncpg.Connection, role_id: UUID
    ) -> list[HolderLimits]:
        return await self._limits_with_role.many_as(HolderLimits, conn, role_id=role_id)

    async def list_api_keys_leaving_role_subtree(
        self, conn: asyncpg.Connection, tenant_id: UUID, new_parent_id: UUID | None
    ) -> list[StrandedKey]:
        return await self._leaving.many_as(
            StrandedKey, conn, tenant_id=tenant_id, new_parent_id=new_parent_id
        )

    async def count_api_keys_outside_role_subtree(
        self, conn: asyncpg.Connection, role_id: UUID
    ) -> int:
        return int(await self._outside.value(conn, role_id=role_id))

    async def get_api_key_for_auth(
        self, conn: asyncpg.Connection, key_hash: bytes
    ) -> KeyCredentials | None:
        return await self._for_auth.one_as(KeyCredentials, conn, key_hash=key_hash)

    async def count_api_keys(self, conn: asyncpg.Connection) -> int:
        return int(await self._count.value(conn))

    async def touch_api_keys(self, conn: asyncpg.Connection, used: Mapping[UUID, datetime]) -> None:
        if used:
            await self._touch.exec(conn, key_ids=list(used), used_at=list(used.values()))

    async def lock_key_bootstrap(self, conn: asyncpg.Connection) -> None:
        await self._lock_bootstrap.exec(conn)
