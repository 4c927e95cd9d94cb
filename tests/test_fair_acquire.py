"""Pooled connections go to those who asked first (service/db/fair_acquire.py).

asyncpg's pool lets a request that asks between a release and the oldest waiter's
turn take the connection first. The test arranges exactly that moment, one newcomer per
step of the event loop around the release, and checks the waiter is served first and
the newcomers in the order they asked. The same choreography on the bare pool lets a
newcomer through: the second test keeps that so, or the first would prove nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from service.db.connections import keep_session
from service.db.fair_acquire import FairAcquire

NEWCOMERS = 6  # asking 0 to 5 loop steps after the release starts

Acquire = Callable[[], Awaitable[Any]]
Release = Callable[[Any], Awaitable[None]]


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(db_url, min_size=1, max_size=1, reset=keep_session)
    assert pool is not None
    try:
        yield pool
    finally:
        await pool.close()


async def _served_order(acquire: Acquire, release: Release) -> list[str]:
    loop = asyncio.get_running_loop()
    served: list[str] = []
    asked: list[str] = []
    tasks: list[asyncio.Task[None]] = []

    async def ask(name: str) -> None:
        asked.append(name)
        conn = await acquire()
        served.append(name)
        await asyncio.sleep(0)
        await release(conn)

    def later(steps: int, name: str) -> None:
        if steps == 0:
            tasks.append(loop.create_task(ask(name)))
        else:
            loop.call_soon(later, steps - 1, name)

    held = await acquire()
    tasks.append(loop.create_task(ask("waiter")))
    for _ in range(4):  # the waiter asks and is queued in the pool (or before it)
        await asyncio.sleep(0)
    assert asked == ["waiter"]
    assert served == []
    releasing = loop.create_task(release(held))
    for step in range(NEWCOMERS):
        later(step, f"newcomer {step}")
    await asyncio.wait_for(releasing, 10)
    for _ in range(NEWCOMERS + 2):  # every newcomer's task exists
        await asyncio.sleep(0)
    assert len(tasks) == NEWCOMERS + 1
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert sorted(asked) == sorted(served)
    return served


async def test_the_oldest_waiter_is_served_first(pool: asyncpg.Pool) -> None:
    in_turn = FairAcquire(1)

    async def acquire() -> Any:
        return await in_turn.acquire(pool, 5)

    async def release(conn: Any) -> None:
        await in_turn.release(pool, conn, 5)

    served = await _served_order(acquire, release)
    assert served == ["waiter"] + [f"newcomer {step}" for step in range(NEWCOMERS)]


async def test_the_bare_pool_lets_a_newcomer_through(pool: asyncpg.Pool) -> None:
    async def acquire() -> Any:
        return await pool.acquire(timeout=5)

    async def release(conn: Any) -> None:
        await pool.release(conn)

    served = await _served_order(acquire, release)
    assert served[0] != "waiter"


async def test_a_slot_is_released_once_and_on_timeout(pool: asyncpg.Pool) -> None:
    in_turn = FairAcquire(1)
    conn = await in_turn.acquire(pool, 5)
    with pytest.raises(TimeoutError):
        await in_turn.acquire(pool, 0.05)  # the only slot is held
    await in_turn.release(pool, conn, 5)
    await in_turn.release(pool, conn, 5)  # a second release gives back no second slot
    first = await in_turn.acquire(pool, 5)
    with pytest.raises(TimeoutError):
        await in_turn.acquire(pool, 0.05)
    await in_turn.release(pool, first, 5)
