"""A tenant's own config entries (the part the tenant object shows and PATCH merges)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from service.db.repository import NamedSql
from service.repositories.entries import EntryRepository, holders
from service.repositories.key_locks import KeyWrite


def json_text(value: Any) -> str:
    # JSON values travel as text: asyncpg would read a list inside a jsonb[] as a sub-array.
    return orjson.dumps(value).decode()


@dataclass(frozen=True, slots=True)
class ConfigEntryRow:
    tenant_id: UUID
    key: str
    value: Any
    encrypted_value: str | None
    locked: bool
    sensitive: bool
    # Its owner shares the (sensitive) value with admins of the tenants below.
    reveal_to_descendants: bool
    # The worker removes the entry then (None: it stays).
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class WriteChecks:
    """What a write of one key checks under its key locks (check_config_write)."""

    locked_by: UUID | None  # the highest tenant above holding the key locked
    protected_by: UUID | None  # the nearest protected tenant at or above
    before: ConfigEntryRow | None  # the tenant's own entry of the key


@dataclass(frozen=True, slots=True)
class ConfigWrite:
    """One value to store: plain (value) or sensitive (encrypted_value)."""

    key: str
    value: Any
    encrypted_value: str | None
    sensitive: bool


class ConfigEntriesRepository(EntryRepository):
    lock_space = "config_entries"
    _list = NamedSql("list_config_entries")
    _get = NamedSql("get_config_entry")
    _upsert_one = NamedSql("upsert_config_entry")
    _delete_one = NamedSql("delete_config_entry")
    _locked = NamedSql("find_locked_config_keys")
    _checks = NamedSql("check_config_write")
    _insert_new = NamedSql("insert_config_for_new_tenants")
    _upsert = NamedSql("upsert_config_values")
    _delete = NamedSql("delete_config_keys")
    _expire = NamedSql("delete_expired_config_entries")

    async def delete_expired_config_entries(
        self, conn: asyncpg.Connection, batch_size: int
    ) -> list[ConfigEntryRow]:
        """Remove due entries that no other transaction holds; returns them."""
        return await self._expire.many_as(ConfigEntryRow, conn, batch_size=batch_size)

    async def list_config_entries(
        self, conn: asyncpg.Connection, tenant_id: UUID
    ) -> list[ConfigEntryRow]:
        return await self._list.many_as(ConfigEntryRow, conn, tenant_id=tenant_id)

    async def get_config_entry(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> ConfigEntryRow | None:
        return await self._get.one_as(ConfigEntryRow, conn, tenant_id=tenant_id, key=key)

    async def check_config_write(
        self, conn: asyncpg.Connection, tenant_id: UUID, parent_id: UUID | None, key: str
    ) -> WriteChecks:
        """The lock above, the protection and the entry a write of key at tenant_id
        meets, in one round trip (run under the key locks)."""
        row = await self._checks.one(conn, tenant_id=tenant_id, parent_id=parent_id, key=key)
        assert row is not None  # one row always
        before = (
            None
            if row["tenant_id"] is None
            else ConfigEntryRow(
                **{k: v for k, v in row.items() if k not in ("locked_by", "protected_by")}
            )
        )
        return WriteChecks(row["locked_by"], row["protected_by"], before)

    async def upsert_config_entry(
        self,
        conn: asyncpg.Connection,
        tenant_id: UUID,
        write: ConfigWrite,
        *,
        locked: bool,
        reveal_to_descendants: bool,
        expires_at: datetime | None = None,
    ) -> ConfigEntryRow:
        row = await self._upsert_one.one(
            conn,
            tenant_id=tenant_id,
            key=write.key,
            value=write.value,
            encrypted_value=write.encrypted_value,
            locked=locked,
            sensitive=write.sensitive,
            reveal_to_descendants=reveal_to_descendants,
            expires_at=expires_at,
        )
        assert row is not None
        return ConfigEntryRow(**row)

    async def delete_config_entry(
        self, conn: asyncpg.Connection, tenant_id: UUID, key: str
    ) -> ConfigEntryRow | None:
        return await self._delete_one.one_as(ConfigEntryRow, conn, tenant_id=tenant_id, key=key)

    async def lock_config_keys(self, conn: asyncpg.Connection, writes: Sequence[KeyWrite]) -> None:
        await self._lock(conn, writes)

    async def find_locked_config_keys(
        self, conn: asyncpg.Connection, tenant_id: UUID, keys: Sequence[str]
    ) -> dict[str, UUID]:
        """Keys locked at tenant_id or above it, mapped to the tenant holding the lock."""
        if not keys:
            return {}
        return holders(await self._locked.many(conn, tenant_id=tenant_id, keys=list(keys)))

    async def insert_config_for_new_tenants(
        self, conn: asyncpg.Connection, entries: Sequence[tuple[UUID, str, Any]]
    ) -> None:
        if entries:
            await self._insert_new.exec(
                conn,
                tenant_ids=[e[0] for e in entries],
                keys=[e[1] for e in entries],
                json_values=[json_text(e[2]) for e in entries],
            )

    async def upsert_config_values(
        self, conn: asyncpg.Connection, tenant_id: UUID, writes: Sequence[ConfigWrite]
    ) -> None:
        if writes:
            await self._upsert.exec(
                conn,
                tenant_id=tenant_id,
                keys=[w.key for w in writes],
                json_values=[None if w.sensitive else json_text(w.value) for w in writes],
                encrypted_values=[w.encrypted_value for w in writes],
                sensitive_flags=[w.sensitive for w in writes],
            )

    async def delete_config_keys(
        self, conn: asyncpg.Connection, tenant_id: UUID, keys: Sequence[str]
    ) -> None:
        if keys:
            await self._delete.exec(conn, tenant_id=tenant_id, keys=list(keys))
