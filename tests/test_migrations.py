"""Migrations: ordered, recorded, checksummed, and safe when two processes start at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from service.db.migrations import MigrationError, apply_migrations, load_migrations
from service.db.queries import Queries
from tests.support.databases import create_database, drop_database


@pytest.fixture
def empty_db(admin_dsn: str) -> Iterator[str]:
    dsn = create_database(admin_dsn, None)
    yield dsn
    drop_database(admin_dsn, dsn)


async def test_two_processes_migrating_at_once_apply_each_file_once(empty_db: str) -> None:
    queries = Queries.load()
    conns = [await asyncpg.connect(empty_db) for _ in range(3)]
    try:
        results = await asyncio.gather(*(apply_migrations(c, queries) for c in conns))
        applied = sorted(len(r) for r in results)
        assert applied == [0, 0, len(load_migrations())]
        rows = await conns[0].fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [m.version for m in load_migrations()]
        assert await apply_migrations(conns[0], queries) == []
    finally:
        for conn in conns:
            await conn.close()


async def test_an_edited_migration_is_refused(empty_db: str) -> None:
    queries = Queries.load()
    conn = await asyncpg.connect(empty_db)
    try:
        await apply_migrations(conn, queries)
        edited = load_migrations()
        first = edited[0]
        edited[0] = type(first)(first.version, first.name, first.sql + "\n-- edited\n")
        with pytest.raises(MigrationError, match="changed after it was applied"):
            await apply_migrations(conn, queries, edited)
    finally:
        await conn.close()


async def test_a_database_newer_than_the_code_is_refused(empty_db: str) -> None:
    queries = Queries.load()
    conn = await asyncpg.connect(empty_db)
    try:
        await apply_migrations(conn, queries)
        with pytest.raises(MigrationError, match="no file defines"):
            await apply_migrations(conn, queries, load_migrations()[:-1])
    finally:
        await conn.close()


def test_migration_files_are_numbered_and_named(tmp_path: Path) -> None:
    migrations = load_migrations()
    assert [m.version for m in migrations] == sorted(m.version for m in migrations)
    (tmp_path / "1_bad.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="NNNN_verb_object"):
        load_migrations(tmp_path)
