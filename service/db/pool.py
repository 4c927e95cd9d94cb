"""The connection pool and the one place transactions start.

`Database.transaction(fn)` runs fn(conn) in a transaction, retrying deadlocks,
serialization failures and stale optimistic reads (RetryTransaction) a few times, so
none of them ever reaches a caller. Acquiring a connection waits at most
DB_ACQUIRE_TIMEOUT_SECONDS; past that the request fails fast with 503.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar, cast

import asyncpg
import orjson

from service.config import Settings
from service.db.errors import service_unavailable
from service.errors import RetryTransaction

T = TypeVar("T")
Connection = asyncpg.Connection
_RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError, RetryTransaction)
MAX_TRANSACTION_ATTEMPTS = 8


def _encode_json(value: Any) -> str:
    return orjson.dumps(value).decode()


async def init_connection(conn: asyncpg.Connection) -> None:
    for typename in ("json", "jsonb"):
        await conn.set_type_codec(
            typename, encoder=_encode_json, decoder=orjson.loads, schema="pg_catalog"
        )


async def connect(dsn: str, **kwargs: Any) -> asyncpg.Connection:
    """A single connection with the service's codecs (migrations, CLI, tests)."""
    conn: asyncpg.Connection = await asyncpg.connect(dsn, **kwargs)
    await init_connection(conn)
    return conn


async def create_pool(settings: Settings, dsn: str) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=settings.db_pool_min_size,
        max_size=settings.db_pool_max_size,
        init=init_connection,
        statement_cache_size=1024,
        max_inactive_connection_lifetime=300,
        server_settings={
            "application_name": "tenant-service",
            "statement_timeout": str(settings.db_statement_timeout_ms),
            "idle_in_transaction_session_timeout": "60000",
            # Tree queries are short; JIT compilation would only add latency.
            "jit": "off",
        },
    )
    assert pool is not None
    return pool


class Database:
    """The pool holder: built by the app factory, opened and closed with the app."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.acquire_timeout = settings.db_acquire_timeout_seconds
        self._pool: asyncpg.Pool | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the database pool is not open")
        return self._pool

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    async def open(self, dsn: str) -> None:
        self._pool = await create_pool(self.settings, dsn)

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        try:
            conn = await self.pool.acquire(timeout=self.acquire_timeout)
        except TimeoutError as exc:
            raise service_unavailable() from exc
        try:
            # A pool proxy behaves as a connection; repositories are typed against that.
            yield cast(asyncpg.Connection, conn)
        finally:
            await self.pool.release(conn)

    async def run(self, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """fn(conn) outside an explicit transaction: for single-statement reads."""
        async with self.connection() as conn:
            return await fn(conn)

    async def transaction(
        self,
        fn: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        isolation: Literal["read_committed", "repeatable_read", "serializable"] = "read_committed",
    ) -> T:
        for attempt in range(1, MAX_TRANSACTION_ATTEMPTS + 1):
            try:
                async with self.connection() as conn, conn.transaction(isolation=isolation):
                    return await fn(conn)
            except _RETRYABLE:
                if attempt == MAX_TRANSACTION_ATTEMPTS:
                    raise
                await asyncio.sleep(random.uniform(0.002, 0.01) * attempt)  # noqa: S311
        raise AssertionError("unreachable")
