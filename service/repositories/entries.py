"""What config entries and permission policies store alike: a tenant's own entries by
key, read into one row type, and the key locks of their writes (lock_entry_keys, in the
lock space of the kind)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar
from uuid import UUID

import asyncpg

from service.db.queries import Query
from service.db.repository import NamedSql, Repository
from service.repositories.key_locks import KeyWrite

R = TypeVar("R")


class EntryRepository(Repository, Generic[R]):
    row_type: type[R]  # a kind's row, built from a record's columns by name
    lock_space: str  # the kind's key lock space (sql/queries/key_locks.sql)
    _lock_keys = NamedSql("lock_entry_keys")

    async def _rows(self, sql: Query, conn: asyncpg.Connection, **params: Any) -> list[R]:
        return [self.row_type(**r) for r in await sql.many(conn, **params)]

    async def _row(self, sql: Query, conn: asyncpg.Connection, **params: Any) -> R | None:
        row = await sql.one(conn, **params)
        return None if row is None else self.row_type(**row)

    async def _locked_keys(
        self, sql: Query, conn: asyncpg.Connection, tenant_id: UUID, keys: Sequence[str]
    ) -> dict[str, UUID]:
        """Keys a lock holds at tenant_id or above it, mapped to the tenant holding it."""
        if not keys:
            return {}
        rows = await sql.many(conn, tenant_id=tenant_id, keys=list(keys))
        return {row["key"]: row["tenant_id"] for row in rows}

    async def _lock(self, conn: asyncpg.Connection, writes: Sequence[KeyWrite]) -> None:
        """Hold the key locks of these writes until the transaction ends (the SQL says how)."""
        if writes:
            await self._lock_keys.value(
                conn,
                lock_space=self.lock_space,
                paths=[w.path for w in writes],
                keys=[w.key for w in writes],
                exclusive=[w.exclusive for w in writes],
            )
