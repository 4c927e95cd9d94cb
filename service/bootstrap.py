"""Start-up work on the database: migrations and, in development, the first admin key."""

from __future__ import annotations

import sys

import asyncpg

from service.auth.principal import SYSTEM_ACTOR
from service.config import Settings
from service.db.migrations import apply_migrations
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.usecases.api_key_issuing import IssuedKey, issue_api_key
from service.usecases.recording import ChangeRecorder


async def prepare_database(
    conn: asyncpg.Connection,
    settings: Settings,
    queries: Queries,
    *,
    bootstrap_key: bool,
) -> IssuedKey | None:
    """Apply migrations; in development with no keys yet, create and print an admin key."""
    await apply_migrations(conn, queries)
    if not bootstrap_key or settings.is_production:
        return None
    repos = Repositories.build(queries)
    async with conn.transaction():
        await repos.api_keys.lock_key_bootstrap(conn)
        if await repos.api_keys.count_api_keys(conn) > 0:
            return None
        issued = await issue_api_key(
            conn,
            keys=repos.api_keys,
            recorder=ChangeRecorder(repos.outbox),
            hmac_secret=settings.api_key_hmac_secret,
            actor=SYSTEM_ACTOR,
            name="development admin",
            scopes=["read", "write", "admin"],
            environment="test" if "test" in settings.api_key_environments else "live",
        )
    print_key_once(issued)
    return issued


def print_key_once(issued: IssuedKey) -> None:
    # Printed to the terminal, never logged: logs must not carry keys.
    sys.stdout.write(
        "\n"
        "  A development admin key was created. It is shown this once:\n\n"
        f"      {issued.plaintext}\n\n"
        "  Try: curl -H 'X-API-Key: <key>' http://localhost:8080/api/v1/tenants\n\n"
    )
    sys.stdout.flush()
