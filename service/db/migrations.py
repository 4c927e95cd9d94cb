"""Plain SQL migrations from sql/migrations/NNNN_verb_object.sql, applied in order.

Concurrent starts are safe: the runner holds a session advisory lock while it reads
what ran and applies the rest, each file in its own transaction.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

import asyncpg

from service.db.queries import Queries, sql_root
from service.db.repository import NamedSql, Repository

MIGRATION_LOCK_ID = 7_310_452_118_900_001
_FILE = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")


class MigrationError(Exception):
    """The migration files or the recorded history are inconsistent."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path | None = None) -> list[Migration]:
    directory = directory or sql_root() / "migrations"
    migrations: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _FILE.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name} is not named NNNN_verb_object.sql")
        migrations.append(
            Migration(int(match["version"]), match["name"], path.read_text(encoding="utf-8"))
        )
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migration files share a version number")
    return migrations


class MigrationsRepository(Repository):
    _create_table = NamedSql("create_migrations_table")
    _lock = NamedSql("lock_migrations")
    _unlock = NamedSql("unlock_migrations")
    _list_applied = NamedSql("list_applied_migrations")
    _record = NamedSql("record_migration")
    _latest = NamedSql("latest_migration_version")
    _table_exists = NamedSql("migrations_table_exists")
    _history = NamedSql("list_migration_history")

    async def lock_migrations(self, conn: asyncpg.Connection) -> None:
        await self._lock.exec(conn, lock_id=MIGRATION_LOCK_ID)

    async def unlock_migrations(self, conn: asyncpg.Connection) -> None:
        await self._unlock.exec(conn, lock_id=MIGRATION_LOCK_ID)

    async def create_migrations_table(self, conn: asyncpg.Connection) -> None:
        # Only when missing: a serving role without CREATE on the schema starts against a
        # database its owner migrated (docs/operations.md "Database roles").
        if not await self._table_exists.value(conn):
            await self._create_table.exec(conn)

    async def list_applied_migrations(self, conn: asyncpg.Connection) -> dict[int, str]:
        rows = await self._list_applied.many(conn)
        return {row["version"]: row["checksum"] for row in rows}

    async def record_migration(self, conn: asyncpg.Connection, migration: Migration) -> None:
        await self._record.exec(
            conn, version=migration.version, name=migration.name, checksum=migration.checksum
        )

    async def migration_history(self, conn: asyncpg.Connection) -> list[asyncpg.Record]:
        """Applied migrations, oldest first; none on a database never migrated."""
        if not await self._table_exists.value(conn):
            return []
        return await self._history.many(conn)

    async def latest_migration_version(self, conn: asyncpg.Connection) -> int | None:
        if not await self._table_exists.value(conn):
            return None
        value = await self._latest.value(conn)
        return None if value is None else int(value)


@dataclass(frozen=True, slots=True)
class MigrationState:
    """One migration as `migrate --status` reports it."""

    version: int
    name: str
    # None: pending. A changed file or a version no file defines is reported, not raised.
    applied_at: datetime | None
    state: Literal["applied", "pending", "changed", "unknown"]


async def migration_status(
    conn: asyncpg.Connection, queries: Queries, migrations: list[Migration] | None = None
) -> list[MigrationState]:
    """Every migration file and every recorded version, in order, without applying any."""
    migrations = load_migrations() if migrations is None else migrations
    repo = MigrationsRepository(queries)
    rows = await repo.migration_history(conn)
    recorded = {row["version"]: row for row in rows}
    states: list[MigrationState] = []
    for migration in migrations:
        row = recorded.pop(migration.version, None)
        if row is None:
            states.append(MigrationState(migration.version, migration.name, None, "pending"))
            continue
        state: Literal["applied", "changed"] = (
            "applied" if row["checksum"] == migration.checksum else "changed"
        )
        states.append(MigrationState(migration.version, migration.name, row["applied_at"], state))
    for version, row in recorded.items():
        states.append(MigrationState(version, row["name"], row["applied_at"], "unknown"))
    return sorted(states, key=lambda s: s.version)


async def apply_migrations(
    conn: asyncpg.Connection, queries: Queries, migrations: list[Migration] | None = None
) -> list[Migration]:
    """Apply every migration not yet recorded; return those applied now."""
    migrations = load_migrations() if migrations is None else migrations
    repo = MigrationsRepository(queries)
    await repo.lock_migrations(conn)
    try:
        await repo.create_migrations_table(conn)
        applied = await repo.list_applied_migrations(conn)
        for version, checksum in applied.items():
            known = next((m for m in migrations if m.version == version), None)
            if known is None:
                raise MigrationError(
                    f"the database has migration {version:04d}, which no file defines "
                    "(is this an older release of the service?)"
                )
            if known.checksum != checksum:
                raise MigrationError(
                    f"migration {version:04d}_{known.name} changed after it was applied; "
                    "add a new migration instead of editing an applied one"
                )
        done: list[Migration] = []
        for migration in migrations:
            if migration.version in applied:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await repo.record_migration(conn, migration)
            done.append(migration)
        return done
    finally:
        await repo.unlock_migrations(conn)
