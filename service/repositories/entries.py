"""What config entries and permission policies store alike: the key locks of their writes
(lock_entry_keys, in the lock space of the kind) and the locks an ancestor holds."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository
from service.repositories.key_locks import KeyWrite


def holders(rows: Sequence[asyncpg.Record]) -> dict[str, UUID]:
    """Locked keys mapped to the tenant holding each lock (find_locked_*_keys rows)."""
    return {row["key"]: row["tenant_id"] for row in rows}


class EntryRepository(Repository):
    lock_space: str  # the kind's key lock space (sql/queries/key_locks.sql)
    _lock_keys = NamedSql("lock_entry_keys")

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
