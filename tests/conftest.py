"""Fixtures: one PostgreSQL per session, a migrated template, a database per module."""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.settings.options import Settings
from tests.support.databases import (
    create_database,
    create_template,
    drop_database,
    test_server,
    with_database,
)
from tests.support.keys import key_headers
from tests.tiers import left_out_of, marks_of_test

JWT_SECRET = "test-jwt-secret-0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdef"
HMAC_SECRET = "test-hmac-secret-0123456789abcdefghijklmnopqrstuvwxyz"
ENCRYPTION_KEY = base64.b64encode(bytes(range(32))).decode()
# A hung test fails with its asyncio tasks' stacks (pytest-timeout's bound).
pytest_plugins = ["tests.support.hangs"]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The quick tier's `-m` does not import the modules it leaves out whole."""
    markexpr = config.getoption("markexpr") or ""
    if collection_path.suffix == ".py" and left_out_of(markexpr, collection_path.stem):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tier markers from tests/tiers.py (`make quick` leaves out processes, browser,
    cluster and slow)."""
    for item in items:
        function = getattr(item, "originalname", item.name)
        for name in marks_of_test(item.path.stem, function):
            item.add_marker(getattr(pytest.mark, name))


@pytest.fixture(scope="session")
def admin_dsn() -> Iterator[str]:
    with test_server(os.environ.get("DATABASE_URL")) as dsn:
        yield dsn


@pytest.fixture(scope="session")
def template_db(admin_dsn: str) -> Iterator[str]:
    # Dropped at the end: a server given by DATABASE_URL outlives the run (and under
    # pytest-xdist each worker has a template of its own).
    template = create_template(admin_dsn)
    yield template
    drop_database(admin_dsn, with_database(admin_dsn, template))


@pytest.fixture(scope="module")
def db_url(admin_dsn: str, template_db: str) -> Iterator[str]:
    """A migrated database shared by the tests of one module."""
    dsn = create_database(admin_dsn, template_db)
    yield dsn
    drop_database(admin_dsn, dsn)


@pytest.fixture
def fresh_db_url(admin_dsn: str, template_db: str) -> Iterator[str]:
    """A migrated database of this test's own (counts, locks, whole-table checks)."""
    dsn = create_database(admin_dsn, template_db)
    yield dsn
    drop_database(admin_dsn, dsn)


def base_env(database_url: str, data_dir: Path, **overrides: Any) -> dict[str, str]:
    env = {
        "DATABASE_URL": database_url,
        "DATA_DIR": str(data_dir),
        "JWT_SECRET": JWT_SECRET,
        "SERVICE_API_KEY_HMAC_SECRET": HMAC_SECRET,
        "SERVICE_ENCRYPTION_KEY": ENCRYPTION_KEY,
        "DB_POOL_MIN_SIZE": "1",
        "DB_POOL_MAX_SIZE": "12",
        "LOG_LEVEL": "warning",
        # Tests make many requests with one key; the rate-limit tests set their own limits.
        "RATE_LIMIT_MAX": "100000",
    }
    env.update({k: str(v) for k, v in overrides.items()})
    return env


@pytest.fixture
def settings_env() -> dict[str, str]:
    """Override in a module (or parametrize) to change settings for its tests."""
    return {}


@pytest.fixture
def settings(db_url: str, tmp_path: Path, settings_env: dict[str, str]) -> Settings:
    return Settings.from_env(base_env(db_url, tmp_path, **settings_env))


@pytest.fixture
def app(settings: Settings) -> web.Application:
    return create_app(settings)


@pytest.fixture
async def client(app: web.Application, aiohttp_client: Any) -> TestClient:
    # app (and so its database) first: fixtures end in reverse order, so the app stops
    # before a per-test database (fresh_db_url) is dropped under it.
    result: TestClient = await aiohttp_client(app)
    return result


@pytest.fixture
async def admin(client: TestClient) -> dict[str, str]:
    """Headers of a global key with read, write and admin."""
    return await key_headers(client.app)


@pytest.fixture
async def writer(client: TestClient) -> dict[str, str]:
    """Headers of a global key with read and write."""
    return await key_headers(client.app, ("read", "write"))


@pytest.fixture
async def db_conn(client: TestClient) -> AsyncIterator[Any]:
    """A connection to the app's database, for assertions on stored rows."""
    from service.http.appkeys import DATABASE

    async with client.app[DATABASE].connection() as conn:
        yield conn
