"""Connections to the database: the codecs every connection gets, the session settings
sent when connecting, and the pool (service/db/pool.py holds it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import asyncpg
import orjson

from service.db.sockets import detect_dead_server
from service.settings.options import Settings

COMMAND_TIMEOUT_MARGIN_SECONDS = 2.0
# Requests and background work have finished (or been given up on) when the pool closes;
# a connection still out after this long is never coming back.
POOL_CLOSE_TIMEOUT_SECONDS = 10.0


def _encode_json(value: Any) -> str:
    return orjson.dumps(value).decode()


async def init_connection(conn: asyncpg.Connection) -> None:
    for typename in ("json", "jsonb"):
        await conn.set_type_codec(
            typename, encoder=_encode_json, decoder=orjson.loads, schema="pg_catalog"
        )


def pooled_init(settings: Settings) -> Callable[[asyncpg.Connection], Coroutine[Any, Any, None]]:
    """The codecs, and the dead-server bounds on the socket (service/db/sockets.py)."""

    async def init(conn: asyncpg.Connection) -> None:
        detect_dead_server(conn, settings.db_dead_connection_seconds)
        await init_connection(conn)

    return init


async def connect(dsn: str, **kwargs: Any) -> asyncpg.Connection:
    """A single connection with the service's codecs (migrations, CLI, tests)."""
    conn: asyncpg.Connection = await asyncpg.connect(dsn, **kwargs)
    await init_connection(conn)
    return conn


def command_timeout(settings: Settings) -> float | None:
    """The client's own bound on a statement, a little past the server's statement
    timeout: a database that stops answering without closing the connection (a network
    partition, a frozen host) still ends in a 503, never a hung request."""
    if settings.db_statement_timeout_ms <= 0:
        return None
    return settings.db_statement_timeout_ms / 1000 + COMMAND_TIMEOUT_MARGIN_SECONDS


async def keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset on release: nothing beyond the rollback of an unfinished
    transaction that asyncpg always does. The default reset costs a round trip per
    request (advisory unlock, CLOSE ALL, UNLISTEN, RESET ALL) for state the service never
    leaves on a pooled connection: its locks and settings are transaction-scoped
    (pg_advisory_xact_lock, set_config(..., true)), it opens no cursors, and it LISTENs
    on dedicated connections only. tests/test_pool_session.py keeps the SQL that way."""


def server_settings(settings: Settings) -> dict[str, str]:
    """Session settings sent when connecting. PgBouncer refuses startup parameters it
    does not know, so through it only application_name is sent: set the others on the
    role (ALTER ROLE ... SET statement_timeout = ..., docs/scaling.md)."""
    if settings.database_pgbouncer:
        return {"application_name": "tenant-service"}
    return {
        "application_name": "tenant-service",
        "statement_timeout": str(settings.db_statement_timeout_ms),
        "idle_in_transaction_session_timeout": "60000",
        "lock_timeout": str(settings.db_lock_timeout_ms),
        # Tree queries are short; JIT compilation would only add latency.
        "jit": "off",
    }


async def create_pool(settings: Settings, dsn: str, *, min_size: int | None = None) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=settings.db_pool_min_size if min_size is None else min_size,
        max_size=settings.db_pool_max_size,
        init=pooled_init(settings),
        reset=keep_session,
        statement_cache_size=settings.database_statement_cache_size,
        max_inactive_connection_lifetime=300,
        command_timeout=command_timeout(settings),
        # A host that does not answer (a dead primary of several) must not hold a
        # request for asyncpg's default minute.
        timeout=settings.db_acquire_timeout_seconds,
        server_settings=server_settings(settings),
    )
    assert pool is not None
    return pool


async def close_pool(pool: asyncpg.Pool, within: float = POOL_CLOSE_TIMEOUT_SECONDS) -> bool:
    """Close the pool gracefully, or terminate it when that takes longer than `within`:
    asyncpg's close waits, without a bound, for every connection to come back and for
    the server (or PgBouncer) to drop each one. True when it closed gracefully."""
    try:
        await asyncio.wait_for(pool.close(), within)
    except TimeoutError:
        # wait_for cancelled close(), which terminates the pool on its way out.
        pool.terminate()
        return False
    return True
