"""Closing the pool is bounded: asyncpg's close waits for every connection to come back,
so one that never does would hold a shutdown (and a test's teardown) forever."""

from __future__ import annotations

import time

import asyncpg
import pytest

from service.db.connections import close_pool


async def test_a_connection_never_given_back_is_terminated_after_the_bound(
    db_url: str,
) -> None:
    pool = await asyncpg.create_pool(db_url, min_size=2, max_size=2)
    assert pool is not None
    kept = await pool.acquire()
    started = time.monotonic()
    assert await close_pool(pool, within=0.5) is False
    assert 0.5 <= time.monotonic() - started < 5
    with pytest.raises(asyncpg.InterfaceError, match="released back to the pool"):
        await kept.fetchval("SELECT 1")  # terminated: the pool took it back


async def test_a_pool_whose_connections_are_back_closes_gracefully(db_url: str) -> None:
    pool = await asyncpg.create_pool(db_url, min_size=2, max_size=2)
    assert pool is not None
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT 1") == 1
    assert await close_pool(pool, within=5) is True
