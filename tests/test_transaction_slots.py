"""Transactions hold at most DB_POOL_TRANSACTIONS pooled connections at once
(service/db/pool.py): the rest of the pool stays with single-statement reads, so a
read never queues behind writes that wait to commit. Each test waits for the events it
depends on (a transaction inside, a waiter parked on the slots), never for time."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from service.base.errors import ServiceError
from service.db.held import HeldTransaction, holding
from service.db.pool import Database, transaction_slots
from service.http.appkeys import DATABASE
from service.settings.options import ConfigError, Settings
from tests.conftest import base_env
from tests.support.waiting import reached

POOL = 4
SLOTS = 2


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {
        "DB_POOL_MIN_SIZE": "0",
        "DB_POOL_MAX_SIZE": str(POOL),
        "DB_POOL_TRANSACTIONS": str(SLOTS),
        "DB_ACQUIRE_TIMEOUT_SECONDS": "0.5",
        # No scheduled jobs: their transactions would take slots at moments of their own.
        "SCHEDULER_POLL_SECONDS": "0",
    }


async def _hold(database: Database, inside: asyncio.Event, release: asyncio.Event) -> int:
    async def work(conn: asyncpg.Connection) -> int:
        inside.set()
        await release.wait()
        pid: int = conn.get_server_pid()
        return pid

    return await database.transaction(work)


async def _parked(database: Database, waiters: int) -> None:
    """Until `waiters` acquires are parked on the transaction slots (a cap that does not
    hold never parks one: the wait fails)."""
    async with asyncio.timeout(5):
        # The semaphore has no event to wait on: its waiters are looked at each turn.
        while len(getattr(database._slots, "_waiters", None) or ()) < waiters:  # noqa: ASYNC110
            await asyncio.sleep(0)


async def _all_free(database: Database) -> None:
    """Until every slot is back: a slot kept by a finished transaction fails the wait."""
    async with asyncio.timeout(5):
        while database._slots._value != SLOTS or database._slotted:  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_transactions_beyond_the_slots_wait_while_reads_go_on(client: Any) -> None:
    database = client.app[DATABASE]
    release = asyncio.Event()
    entered = [asyncio.Event() for _ in range(SLOTS + 1)]
    holders = [asyncio.create_task(_hold(database, e, release)) for e in entered[:SLOTS]]
    await reached(entered[:SLOTS], holders)
    third = asyncio.create_task(_hold(database, entered[SLOTS], release))
    await _parked(database, 1)
    assert not entered[SLOTS].is_set()
    # The pool still has POOL - SLOTS connections for single statements.
    reads = await asyncio.gather(
        *(database.run(lambda c: c.fetchval("SELECT 1")) for _ in range(4))
    )
    assert reads == [1, 1, 1, 1]
    release.set()
    await asyncio.gather(*holders, third)
    assert entered[SLOTS].is_set()
    await _all_free(database)


async def test_a_transaction_that_finds_no_slot_answers_503_and_takes_none(client: Any) -> None:
    database = client.app[DATABASE]
    release = asyncio.Event()
    entered = [asyncio.Event() for _ in range(SLOTS)]
    holders = [asyncio.create_task(_hold(database, e, release)) for e in entered]
    await reached(entered, holders)
    with pytest.raises(ServiceError) as refused:
        await database.transaction(lambda conn: conn.fetchval("SELECT 1"))
    assert refused.value.code == "SERVICE_UNAVAILABLE"
    release.set()
    await asyncio.gather(*holders)
    await _all_free(database)


async def test_a_failed_transaction_gives_its_slot_back(client: Any) -> None:
    database = client.app[DATABASE]

    async def fail(conn: asyncpg.Connection) -> None:
        await conn.execute("SELECT 1/0")

    for _ in range(SLOTS + 1):
        with pytest.raises(asyncpg.DivisionByZeroError):
            await database.transaction(fail)
    await _all_free(database)
    assert await database.transaction(lambda conn: conn.fetchval("SELECT 2")) == 2


def test_the_default_is_half_the_pool_and_at_least_one(tmp_path: Any, db_url: str) -> None:
    def slots(**env: str) -> int:
        return transaction_slots(Settings.from_env(base_env(db_url, tmp_path, **env)))

    assert slots(DB_POOL_MAX_SIZE="10") == 5
    assert slots(DB_POOL_MAX_SIZE="1", DB_POOL_MIN_SIZE="1") == 1
    assert slots(DB_POOL_MAX_SIZE="3") == 1
    assert slots(DB_POOL_MAX_SIZE="10", DB_POOL_TRANSACTIONS="10") == 10


def test_more_slots_than_the_pool_is_refused_at_start(tmp_path: Any, db_url: str) -> None:
    env = base_env(db_url, tmp_path, DB_POOL_MAX_SIZE="4", DB_POOL_TRANSACTIONS="5")
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    assert "DB_POOL_TRANSACTIONS must not exceed DB_POOL_MAX_SIZE" in str(caught.value)


async def test_a_held_transaction_whose_connection_dies_gives_its_slot_back(
    client: Any, db_url: str
) -> None:
    """The pool takes a pooled connection back by itself when it closes; its proxy then
    refuses every call. A held transaction settled after that (a PgBouncer that killed
    its clients) still gives its slot back, so writes go on."""
    database = client.app[DATABASE]

    async def nothing(conn: asyncpg.Connection) -> None:
        return None

    async def server_pid(conn: asyncpg.Connection) -> int:
        pid: int = conn.get_server_pid()
        return pid

    killer = await asyncpg.connect(db_url)
    try:
        for _ in range(SLOTS + 1):
            held = HeldTransaction(nothing)
            with holding(held):
                pid = await database.transaction(server_pid)
                await killer.execute("SELECT pg_terminate_backend($1)", pid)
                with pytest.raises(
                    (
                        asyncpg.PostgresError,
                        asyncpg.InterfaceError,
                        asyncpg.InternalClientError,
                        OSError,
                    )
                ):
                    await database.settle_held(held, nothing)
    finally:
        await killer.close()
    await _all_free(database)
    assert await database.transaction(lambda conn: conn.fetchval("SELECT 3")) == 3
