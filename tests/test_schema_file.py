"""sql/schema.sql builds the same database as the migrations (regenerate: `make schema`)."""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Iterator

import asyncpg
import pytest

from tests.support.databases import create_database, drop_database
from tests.support.schema_dump import SCHEMA_FILE, dump, normalize


@pytest.fixture
def empty_db(admin_dsn: str) -> Iterator[str]:
    dsn = create_database(admin_dsn, None)
    yield dsn
    drop_database(admin_dsn, dsn)


async def _load(dsn: str, text: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        # Loaded as pg_dump's own restore would: an empty search_path (the dump names its
        # objects schema-qualified) and function bodies checked when first run.
        async with conn.transaction():
            await conn.execute("SELECT pg_catalog.set_config('search_path', '', true)")
            await conn.execute("SELECT pg_catalog.set_config('check_function_bodies', 'off', true)")
            await conn.execute(text)
    finally:
        await conn.close()


def test_schema_file_builds_the_migrated_database(
    admin_dsn: str, template_db: str, empty_db: str
) -> None:
    asyncio.run(_load(empty_db, normalize(SCHEMA_FILE.read_text(encoding="utf-8"))))
    # A copy of the template: a connection to the template itself would stop other
    # tests from copying it meanwhile.
    copy = create_database(admin_dsn, template_db)
    try:
        migrated = dump(copy).splitlines()
    finally:
        drop_database(admin_dsn, copy)
    from_file = dump(empty_db).splitlines()
    diff = list(
        difflib.unified_diff(migrated, from_file, "migrations", "sql/schema.sql", lineterm="", n=1)
    )
    assert diff == [], "sql/schema.sql is stale: run `make schema`\n" + "\n".join(diff[:60])


def test_the_comparison_sees_a_missing_column(admin_dsn: str, template_db: str) -> None:
    """The check can fail: a dump differs once the database has one column more."""
    copy = create_database(admin_dsn, template_db)
    try:

        async def alter() -> None:
            conn = await asyncpg.connect(copy)
            try:
                await conn.execute("ALTER TABLE tenants ADD COLUMN schema_check_probe integer")
            finally:
                await conn.close()

        asyncio.run(alter())
        pristine = create_database(admin_dsn, template_db)
        try:
            assert dump(copy) != dump(pristine)
        finally:
            drop_database(admin_dsn, pristine)
    finally:
        drop_database(admin_dsn, copy)
