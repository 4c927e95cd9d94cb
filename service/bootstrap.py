"""Start-up work on the database: migrations and, in development, the first admin key."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import asyncpg

from service.auth.keys import default_environment
from service.auth.principal import SYSTEM_ACTOR
from service.db.migrations import apply_migrations
from service.db.pool import Database
from service.db.queries import Queries
from service.observability.logs import get_logger
from service.repositories.registry import Repositories
from service.settings.options import Settings
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import IssuedKey, issue_api_key

log = get_logger(__name__)
# Under DATA_DIR when stdout is not a terminal (a container, a pipe to a log collector).
KEY_FILE = "development-admin-key"

DEVELOPMENT_KEY_NAME = "development admin"
# The development key's own rate limit: one console page costs a few requests, so the
# default of 100 a minute is reachable by clicking; 6,000 a minute is not
# (docs/decisions/runtime.md). A higher RATE_LIMIT_MAX raises it: the key must be able to
# create keys of the default limit (a key may not give more than it has).
DEVELOPMENT_KEY_RATE_LIMIT = 6000
DEVELOPMENT_KEY_WINDOW_SECONDS = 60


def development_key_limit(settings: Settings) -> tuple[int, int]:
    """(requests, window seconds) of the development admin key: at least 6,000 a minute,
    and never fewer requests, or a slower refill, than the configured default."""
    return (
        max(DEVELOPMENT_KEY_RATE_LIMIT, settings.rate_limit_max),
        min(DEVELOPMENT_KEY_WINDOW_SECONDS, settings.rate_limit_window_seconds),
    )


async def prepare_database(conn: asyncpg.Connection, queries: Queries) -> None:
    """Apply the migrations (under an advisory lock, so replicas may start together)."""
    await apply_migrations(conn, queries)


async def bootstrap_admin_key(
    database: Database, settings: Settings, queries: Queries
) -> IssuedKey | None:
    """In development with no keys yet, create an admin key (once: under a lock, so
    several workers starting together make one). The caller shows it; the server calls
    this only once it listens, so a start that cannot bind never spends the key."""
    if settings.is_production:
        return None
    repos = Repositories.build(queries)
    limit, window = development_key_limit(settings)
    async with database.connection() as conn, conn.transaction():
        await repos.api_keys.lock_key_bootstrap(conn)
        if await repos.api_keys.count_api_keys(conn) > 0:
            return None
        return await issue_api_key(
            conn,
            keys=repos.api_keys,
            recorder=ChangeRecorder(repos.outbox),
            hmac_secret=settings.api_key_hmac_secret,
            actor=SYSTEM_ACTOR,
            name=DEVELOPMENT_KEY_NAME,
            scopes=["read", "write", "admin"],
            environment=default_environment(settings.is_production, settings.api_key_environments),
            rate_limit_max=limit,
            rate_limit_window=_window_text(window),
            rate_limit_window_seconds=window,
        )


def _window_text(seconds: int) -> str:
    if seconds == 60:
        return "1 minute"
    return f"{seconds} second{'' if seconds == 1 else 's'}"


def show_key_once(issued: IssuedKey, data_dir: Path, port: int) -> None:
    """On a terminal, print the key; otherwise stdout is the JSON log stream (docker
    logs, a collector), which must never carry a key: write it to a file only the
    service's user can read and log where it is."""
    if on_terminal():
        print_key_once(issued, port)
        return
    path = write_key_file(issued, data_dir)
    log.warning("development admin key created; it is in this file only", path=str(path))


def on_terminal() -> bool:
    return sys.stdout.isatty()


def write_key_file(issued: IssuedKey, data_dir: Path) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    path = (data_dir / KEY_FILE).resolve()
    # O_EXCL after unlink: never reuse a file someone else may have opened or linked.
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(issued.plaintext + "\n")
    return path


def print_key_once(issued: IssuedKey, port: int) -> None:
    sys.stdout.write(
        "\n"
        "  A development admin key was created. It is shown this once:\n\n"
        f"      {issued.plaintext}\n\n"
        f"  Try: curl -H 'X-API-Key: <key>' http://localhost:{port}/api/v1/tenants\n"
        f"  Console: http://localhost:{port}/console\n\n"
    )
    sys.stdout.flush()
