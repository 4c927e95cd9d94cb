"""Idempotency-Key records: one stored (encrypted) answer per caller and key."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from service.db.repository import NamedSql, Repository


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    id: UUID
    request_hash: bytes
    status: int
    answer: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class NewStoredAnswer:
    id: UUID
    key_hash: bytes
    request_hash: bytes
    status: int
    answer: str
    mentioned_ids: Sequence[UUID]


@dataclass(frozen=True, slots=True)
class AnswerCiphertext:
    id: UUID
    key_hash: bytes
    answer: str


class IdempotencyRepository(Repository):
    _lock = NamedSql("lock_idempotency_key")
    _get = NamedSql("get_idempotency_key")
    _insert = NamedSql("insert_idempotency_key")
    _delete_of_tenants = NamedSql("delete_idempotency_keys_of_tenants")
    _batch = NamedSql("lock_idempotency_answers_batch")
    _update_answers = NamedSql("update_idempotency_answers")

    async def lock_idempotency_key(self, conn: asyncpg.Connection, key_hash: bytes) -> bool:
        lock_id = int.from_bytes(key_hash[:8], "big", signed=True)
        return bool(await self._lock.value(conn, lock_id=lock_id))

    async def get_idempotency_key(
        self, conn: asyncpg.Connection, key_hash: bytes
    ) -> StoredAnswer | None:
        return await self._get.one_as(StoredAnswer, conn, key_hash=key_hash)

    async def insert_idempotency_key(self, conn: asyncpg.Connection, new: NewStoredAnswer) -> bool:
        stored = await self._insert.value(
            conn,
            record_id=new.id,
            key_hash=new.key_hash,
            request_hash=new.request_hash,
            status=new.status,
            answer=new.answer,
            mentioned_ids=list(new.mentioned_ids),
        )
        return stored is not None

    async def delete_idempotency_keys_of_tenants(
        self, conn: asyncpg.Connection, tenant_ids: Sequence[UUID]
    ) -> int:
        result = await self._delete_of_tenants.exec(conn, tenant_ids=list(tenant_ids))
        return int(result.split()[-1])

    async def lock_idempotency_answers_batch(
        self, conn: asyncpg.Connection, after: UUID | None, limit: int
    ) -> list[AnswerCiphertext]:
        return await self._batch.many_as(AnswerCiphertext, conn, after_id=after, batch_size=limit)

    async def update_idempotency_answers(
        self, conn: asyncpg.Connection, values: Sequence[AnswerCiphertext]
    ) -> None:
        if values:
            await self._update_answers.exec(
                conn, record_ids=[v.id for v in values], answers=[v.answer for v in values]
            )
