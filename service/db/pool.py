"""The connection pool and the one place transactions start.

`Database.transaction(fn)` runs fn(conn) in a transaction, retrying deadlocks,
serialization failures and stale optimistic reads (RetryTransaction) a few times, so
none of them ever reaches a caller. Acquiring a connection waits at most
DB_ACQUIRE_TIMEOUT_SECONDS; past that the request fails fast with 503.

A request that holds its transaction (an Idempotency-Key POST, service/db/held.py) gets
its first transaction kept open for its answer, and runs everything after it on the
same connection.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, Literal, TypeVar, cast

import asyncpg
from asyncpg.transaction import Transaction

from service.base.errors import RetryTransaction
from service.base.slots import acquire_within
from service.db.connections import (
    close_pool,
    command_timeout,
    connect,
    create_pool,
    init_connection,
    keep_session,
    server_settings,
)
from service.db.consistency import primary_only, required_position
from service.db.errors import is_unavailable, leaves_connection_broken, service_unavailable
from service.db.fair_acquire import FairAcquire
from service.db.held import HeldTransaction, current_hold
from service.db.probe import Probe
from service.db.queries import Queries
from service.db.replicas import Replica, ReplicaSet
from service.db.replication import ReplicationRepository
from service.db.sockets import detect_dead_server
from service.observability.logs import get_logger
from service.settings.options import Settings

# Connections are made in service/db/connections.py; callers find them here too.
__all__ = [
    "Database",
    "command_timeout",
    "connect",
    "create_pool",
    "init_connection",
    "keep_session",
    "server_settings",
]
T = TypeVar("T")
log = get_logger("service.db.pool")
Connection = asyncpg.Connection
_RETRYABLE = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError, RetryTransaction)
MAX_TRANSACTION_ATTEMPTS = 8
Isolation = Literal["read_committed", "repeatable_read", "serializable"]
# A connection taken from a usable replica's pool: the replica, its pool, the connection.
ReplicaConnection = tuple[Replica, asyncpg.Pool, asyncpg.Connection]


async def _retrying(attempt: Callable[[], Awaitable[T]]) -> T:
    """attempt() again after a deadlock, a serialization failure or a stale optimistic
    read (RetryTransaction), with backoff, at most MAX_TRANSACTION_ATTEMPTS times: the one
    retry loop of every kind of transaction."""
    for number in range(1, MAX_TRANSACTION_ATTEMPTS + 1):
        try:
            return await attempt()
        except _RETRYABLE:
            if number == MAX_TRANSACTION_ATTEMPTS:
                raise
            await _backoff(number)
    raise AssertionError("unreachable")


async def _backoff(attempt: int) -> None:
    await asyncio.sleep(random.uniform(0.002, 0.01) * attempt)  # noqa: S311


class Database:
    """The pool holder: built by the app factory, opened and closed with the app."""

    def __init__(self, settings: Settings, queries: Queries | None = None) -> None:
        self.settings = settings
        self._positions = ReplicationRepository(queries or Queries.load())
        self.acquire_timeout = settings.db_acquire_timeout_seconds
        self.transaction_slots = transaction_slots(settings)
        self._slots = asyncio.Semaphore(self.transaction_slots)
        self._slotted: set[int] = set()  # id() of the connections holding a slot
        self._in_turn = FairAcquire(settings.db_pool_max_size)
        self._pool: asyncpg.Pool | None = None
        self._dsn: str | None = None
        self._primary_down_until = 0.0
        # /ready's own connection: readiness never waits for a pooled one.
        self.probe = Probe(self._probe_connection, settings.db_acquire_timeout_seconds)
        self.replicas = ReplicaSet(
            settings.database_replica_urls,
            max_lag_seconds=settings.database_replica_max_lag_seconds,
            check_seconds=settings.database_replica_check_seconds,
            pool_factory=lambda url: create_pool(settings, url, min_size=0),
            positions=self._positions,
        )

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("the database pool is not open")
        return self._pool

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    async def open(self, dsn: str) -> None:
        self._dsn = dsn
        self._pool = await create_pool(self.settings, dsn)
        await self.replicas.start(self._pool)

    async def _probe_connection(self) -> asyncpg.Connection:
        assert self._dsn is not None
        settings = self.settings
        conn: asyncpg.Connection = await asyncpg.connect(
            self._dsn,
            timeout=settings.db_acquire_timeout_seconds,
            statement_cache_size=0,
            server_settings=server_settings(settings),
        )
        detect_dead_server(conn, settings.db_dead_connection_seconds)
        return conn

    async def close(self) -> None:
        await self.probe.close()
        await self.replicas.stop()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if not await close_pool(pool):
                log.warning("pool terminated", reason="a connection was not given back in time")

    async def _acquire(self, within: float | None = None) -> asyncpg.Connection:
        try:
            # A pool proxy behaves as a connection; repositories are typed against that.
            return await self._in_turn.acquire(
                self.pool, self.acquire_timeout if within is None else within
            )
        except TimeoutError as exc:
            raise service_unavailable() from exc

    async def _acquire_for_transaction(self) -> asyncpg.Connection:
        """A pooled connection for a transaction, once one of the transaction slots is
        free (both waits together within the acquire timeout). A write waiting its turn
        at commit holds its connection meanwhile; capped at DB_POOL_TRANSACTIONS, such
        writes leave the rest of the pool to single-statement reads."""
        started = time.monotonic()
        try:
            await acquire_within(self._slots, self.acquire_timeout)
        except TimeoutError as exc:
            raise service_unavailable() from exc
        try:
            left = max(0.001, self.acquire_timeout - (time.monotonic() - started))
            conn = await self._acquire(left)
        except BaseException:
            self._slots.release()
            raise
        self._slotted.add(id(conn))
        return conn

    async def _release(self, conn: asyncpg.Connection) -> None:
        try:
            await self._in_turn.release(self.pool, conn, self.acquire_timeout)
        finally:
            if id(conn) in self._slotted:
                self._slotted.discard(id(conn))
                self._slots.release()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        held = current_hold()
        if held is not None and held.conn is not None:
            yield held.conn  # the request's held transaction (service/db/held.py)
            return
        conn = await self._acquire()
        try:
            with discarding_broken(conn):
                yield conn
        finally:
            await self._release(conn)

    async def run(self, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """fn(conn) outside an explicit transaction: for single-statement reads."""
        async with self.connection() as conn:
            return await fn(conn)

    async def read(self, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """fn(conn) for a read that replica data may answer (docs/scaling.md): on a
        usable replica, else on the primary. A replica that fails is skipped from then
        on and the read runs again on the primary."""
        result, _ = await self._read(fn, positioned=False)
        return result

    async def primary_unless_down(
        self, fn: Callable[[asyncpg.Connection], Awaitable[T]]
    ) -> tuple[T] | None:
        """(fn(conn),) on the primary; or None when, with replicas configured, the
        primary cannot be reached (then it is not tried again for a replica check
        interval, so a vanished host is not waited for on every read)."""
        if self.replicas and time.monotonic() < self._primary_down_until:
            return None
        try:
            return (await self.run(fn),)
        except Exception as exc:
            if not self.replicas or not is_unavailable(exc) or current_hold() is not None:
                raise
            self._primary_down_until = time.monotonic() + self.replicas.check_seconds
            return None

    async def read_primary_first(self, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """fn(conn) on the primary, or, while the primary cannot be reached, on a usable
        replica (for lookups that want the primary's answer, such as an API key, but
        whose replica answer is as fresh as DATABASE_REPLICA_MAX_LAG_SECONDS while the
        primary takes no writes anyway)."""
        answered = await self.primary_unless_down(fn)
        if answered is not None:
            return answered[0]
        taken = await self._replica_connection()
        if taken is None:
            raise service_unavailable()
        async with self._on_replica(taken, fall_back=False) as conn:
            return await fn(conn)

    async def read_replayed(
        self, fn: Callable[[asyncpg.Connection], Awaitable[T]]
    ) -> tuple[T, int | None]:
        """As read(), with the WAL position the replica had replayed before fn's
        snapshot was taken (its own statement first: a lower bound), or None when the
        primary answered (always current). For reads that fill the read cache."""
        return await self._read(fn, positioned=True)

    async def _read(
        self, fn: Callable[[asyncpg.Connection], Awaitable[T]], *, positioned: bool
    ) -> tuple[T, int | None]:
        taken = await self._replica_connection()
        if taken is not None:
            async with self._on_replica(taken, fall_back=True) as conn:
                replayed = 0
                if positioned:
                    replayed = await self._positions.replayed_position(conn)
                return await fn(conn), replayed
        return await self.run(fn), None

    @asynccontextmanager
    async def read_connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection for several reads that replica data may answer. A replica that
        fails midway is skipped from then on; the request answers 503 (retry)."""
        taken = await self._replica_connection()
        if taken is None:
            async with self.connection() as conn:
                yield conn
            return
        async with self._on_replica(taken, fall_back=False) as conn:
            yield conn

    @asynccontextmanager
    async def _on_replica(
        self, taken: ReplicaConnection, *, fall_back: bool
    ) -> AsyncIterator[asyncpg.Connection]:
        """The connection of `taken`, given back to its replica's pool after use. When
        the replica fails the read, it is skipped from then on (not for a recovery
        conflict: the replica is fine) and the read answers 503 (retry); or, with
        `fall_back`, the error is swallowed and the caller reads on the primary."""
        replica, pool, conn = taken
        try:
            try:
                with discarding_broken(conn):
                    yield conn
            finally:
                await _give_back(pool, conn)
        except Exception as exc:
            if not _replica_trouble(exc):
                raise
            if not _recovery_conflict(exc):
                await self.replicas.failed_read(replica, exc)
            if not fall_back:
                raise service_unavailable() from exc

    async def _replica_connection(self) -> ReplicaConnection | None:
        """A connection of a usable replica, or None: the primary reads. A replica that
        cannot connect is skipped from then on; one whose pool is busy, for this read."""
        held = current_hold()
        if primary_only() or (held is not None and held.conn is not None):
            return None  # a write request, or inside a write's transaction
        replica = self.replicas.choose(required_position())
        pool = None if replica is None else replica.pool
        if replica is None or pool is None:
            return None
        try:
            conn = await pool.acquire(timeout=self.acquire_timeout)
        except TimeoutError:
            return None
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            await self.replicas.failed_read(replica, exc)
            return None
        return replica, pool, cast(asyncpg.Connection, conn)

    async def write_position(self) -> int | None:
        """The primary's WAL position now (after a commit: at or past its record; so,
        for the read cache, past every change whose announcement has arrived)."""
        try:
            async with self.connection() as conn:
                return await self._positions.current_position(conn)
        except Exception:
            return None  # the write happened; only its token is missing

    async def transaction(
        self,
        fn: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        isolation: Isolation = "read_committed",
    ) -> T:
        held = current_hold()
        if held is not None:
            if held.conn is not None:
                return await self._savepoint(held.conn, fn)
            return await self._first_held(held, fn, isolation)

        async def once() -> T:
            conn = await self._acquire_for_transaction()
            try:
                with discarding_broken(conn):
                    async with conn.transaction(isolation=isolation):
                        return await fn(conn)
            finally:
                await self._release(conn)

        return await _retrying(once)

    async def _first_held(
        self,
        held: HeldTransaction,
        fn: Callable[[asyncpg.Connection], Awaitable[T]],
        isolation: Isolation,
    ) -> T:
        """The request's first transaction: run like any other, but kept open (not
        committed) for the middleware to settle with settle_held()."""

        async def once() -> T:
            conn = await self._acquire_for_transaction()
            transaction = conn.transaction(isolation=isolation)
            try:
                await transaction.start()
                await held.on_begin(conn)
                result = await fn(conn)
            except BaseException as exc:
                discard_if_broken(conn, exc)
                await asyncio.shield(self._abandon(conn, transaction))
                raise
            held.hold(conn, transaction)
            return result

        return await _retrying(once)

    async def _savepoint(
        self, conn: asyncpg.Connection, fn: Callable[[asyncpg.Connection], Awaitable[T]]
    ) -> T:
        """A later transaction of a request that holds one: a savepoint inside it."""

        async def once() -> T:
            with discarding_broken(conn):
                async with conn.transaction():
                    return await fn(conn)

        return await _retrying(once)

    async def settle_held(
        self,
        held: HeldTransaction,
        before_commit: Callable[[asyncpg.Connection], Awaitable[None]] | None,
    ) -> None:
        """Commit the held transaction after before_commit(conn), or roll it back when
        before_commit is None. The connection goes back to the pool either way."""
        taken = held.take()
        if taken is None:
            return
        conn, transaction = taken
        if before_commit is None:
            await asyncio.shield(self._abandon(conn, transaction))
            return
        try:
            await before_commit(conn)
            await transaction.commit()
        except BaseException as exc:
            discard_if_broken(conn, exc)
            await asyncio.shield(self._abandon(conn, transaction))
            raise
        await self._release(conn)

    async def _abandon(self, conn: asyncpg.Connection, transaction: Transaction) -> None:
        """Roll back (when the connection still can) and give the connection back."""
        try:
            if not conn.is_closed():
                await transaction.rollback()
        except Exception:  # noqa: S110 - a broken connection is reset by the pool below
            pass
        finally:
            await self._release(conn)


def transaction_slots(settings: Settings) -> int:
    """DB_POOL_TRANSACTIONS, or half the pool (at least 1) when it is 0."""
    return settings.db_pool_transactions or max(1, settings.db_pool_max_size // 2)


def discard_if_broken(conn: asyncpg.Connection, exc: BaseException) -> None:
    """Terminate a connection an error has left in an unknown protocol state, so the
    pool opens a fresh one instead of handing it to the next request."""
    if not leaves_connection_broken(exc):
        return
    # A pooled connection that closed has been taken back by the pool already; its proxy
    # then refuses every call. The caller must still go on to give it back (the
    # transaction slot goes with that), so this never raises.
    with suppress(asyncpg.InterfaceError):
        if not conn.is_closed():
            conn.terminate()


@contextmanager
def discarding_broken(conn: asyncpg.Connection) -> Iterator[None]:
    """Every use of a connection runs inside this: what breaks it, discards it."""
    try:
        yield
    except BaseException as exc:
        discard_if_broken(conn, exc)
        raise


async def _give_back(pool: asyncpg.Pool, conn: asyncpg.Connection) -> None:
    # A replica pool closed meanwhile (the replica failed) has dropped the connection.
    with suppress(Exception):
        await pool.release(cast(Any, conn))


def _recovery_conflict(exc: BaseException) -> bool:
    """A standby cancelled the read to replay WAL (or it ran too long): the primary
    answers it; the replica itself is fine."""
    return isinstance(exc, asyncpg.SerializationError | asyncpg.QueryCanceledError)


def _replica_trouble(exc: BaseException) -> bool:
    return _recovery_conflict(exc) or is_unavailable(exc)
