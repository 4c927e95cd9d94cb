"""Credentials for tests that run the service as a real process."""

from __future__ import annotations

from service.auth.principal import SYSTEM_ACTOR
from service.db.pool import connect
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import issue_api_key


async def admin_key(dsn: str, hmac_secret: str) -> str:
    """The text of a new global read, write and admin key in the database at dsn."""
    queries = Queries.load()
    repos = Repositories.build(queries)
    conn = await connect(dsn)
    try:
        async with conn.transaction():
            issued = await issue_api_key(
                conn, keys=repos.api_keys, recorder=ChangeRecorder(repos.outbox),
                hmac_secret=hmac_secret.encode(), actor=SYSTEM_ACTOR, name="test admin",
                scopes=["read", "write", "admin"],
            )  # fmt: skip
    finally:
        await conn.close()
    return issued.plaintext
