"""Pooled connections skip asyncpg's per-release session reset (service/db/pool.py
keep_session). That is only safe while nothing leaves session state behind: these tests
keep the named queries free of session-level locks and settings, and check that a
connection comes back from the pool as clean as it went."""

from __future__ import annotations

import re

from service.db.queries import Queries
from service.http.appkeys import DATABASE

SESSION_STATE = [
    re.compile(r"pg_(try_)?advisory_lock(_shared)?\s*\(", re.IGNORECASE),
    re.compile(r"set_config\s*\([^)]*,\s*false\s*\)", re.IGNORECASE),
    # Statements that change the session itself (each named query is one statement).
    re.compile(r"\A\s*(SET|RESET|LISTEN|DECLARE|PREPARE)\s", re.IGNORECASE),
]
# Run on a connection of their own, never a pooled one (service/db/migrations.py).
DEDICATED_CONNECTION = {"lock_migrations"}


def test_named_queries_leave_no_session_state() -> None:
    offenders = [
        (query.name, pattern.pattern)
        for query in Queries.load().values()
        for pattern in SESSION_STATE
        if pattern.search(query.sql) and query.name not in DEDICATED_CONNECTION
    ]
    assert offenders == []


def test_the_patterns_catch_session_state() -> None:
    samples = [
        "SELECT pg_advisory_lock(1)",
        "SELECT set_config('x.y', 'on', false)",
        "SET statement_timeout = 0",
        "LISTEN channel",
    ]
    assert all(any(p.search(s) for p in SESSION_STATE) for s in samples)
    assert not any(p.search("SELECT pg_advisory_xact_lock(1)") for p in SESSION_STATE)
    assert not any(p.search("SELECT set_config('x.y', 'on', true)") for p in SESSION_STATE)


async def test_a_pooled_connection_comes_back_clean(client) -> None:
    database = client.app[DATABASE]
    database_pool = database.pool
    # One connection at a time, so the second acquire gets the first one back.
    async with database.connection() as conn:
        first_pid = conn.get_server_pid()
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(42)")
            await conn.execute("SELECT set_config('tenant_service.probe', 'on', true)")
    for _ in range(database_pool.get_size()):
        async with database.connection() as conn:
            if conn.get_server_pid() != first_pid:
                continue
            assert await conn.fetchval("SELECT current_setting('tenant_service.probe', true)") in (
                None,
                "",
            )
            assert not await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                "AND pid = pg_backend_pid())"
            )
            assert not conn.is_in_transaction()
