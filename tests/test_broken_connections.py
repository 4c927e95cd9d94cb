"""A pooled connection left in an unknown protocol state is discarded, and the request
that met it answers 503 with Retry-After, never 500.

During a switchover PgBouncer writes an ErrorResponse to its idle client connections
before closing them. If a request takes such a connection from the pool before the
close arrives, asyncpg has already consumed the unsolicited error and waits for a
ReadyForQuery that never comes: the next statement raises InternalClientError ("cannot
switch to state 12; another operation is in progress"). A proxy that writes that error
to every idle connection and keeps them open stages the race deterministically."""

from __future__ import annotations

import fcntl
import struct
import termios
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.http.appkeys import DATABASE
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import unique_slug
from tests.support.fault_servers import InjectingProxy
from tests.support.keys import key_headers
from tests.support.tcp_proxy import postgres_opener
from tests.support.webhooks import eventually

POOL_SIZE = 4


@pytest.fixture
async def proxy(fresh_db_url: str) -> AsyncIterator[InjectingProxy]:
    started = InjectingProxy(postgres_opener(fresh_db_url))
    await started.start()
    yield started
    await started.stop()


async def _client(
    proxy: InjectingProxy, db_url: str, tmp_path: Path, aiohttp_client: Any
) -> TestClient:
    name = urlsplit(db_url).path.lstrip("/")
    through_proxy = f"postgresql://postgres@127.0.0.1:{proxy.port}/{name}"
    env = base_env(
        through_proxy, tmp_path, DB_POOL_MIN_SIZE=str(POOL_SIZE),
        DB_POOL_MAX_SIZE=str(POOL_SIZE), WEBHOOK_CONCURRENCY="0",
        # The listener on the direct URL: only the pool meets the injected errors.
        DATABASE_LISTEN_URL=db_url,
    )  # fmt: skip
    client: TestClient = await aiohttp_client(create_app(Settings.from_env(env)))
    return client


async def read_by_the_pool(pool: Any) -> None:
    """Until every pooled connection's socket has no unread byte: asyncpg has taken the
    injected error in (an event, not a pause)."""

    def unread(holder: Any) -> int:
        sock = holder._con._transport.get_extra_info("socket")
        return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0]

    async def all_read() -> bool:
        return all(unread(h) == 0 for h in pool._holders if h._con is not None)

    await eventually(all_read, within=5, interval=0.01)


async def test_an_error_written_to_idle_pooled_connections_never_answers_500(
    proxy: InjectingProxy, fresh_db_url: str, tmp_path: Path, aiohttp_client: Any
) -> None:
    client = await _client(proxy, fresh_db_url, tmp_path, aiohttp_client)
    headers = await key_headers(client.app)
    pool = client.app[DATABASE].pool

    async def all_idle() -> bool:
        return pool.get_size() == POOL_SIZE and pool.get_idle_size() == POOL_SIZE

    await eventually(all_idle, within=10, interval=0.02)
    assert proxy.inject_error() >= POOL_SIZE
    await read_by_the_pool(pool)

    statuses: list[int] = []
    for _ in range(POOL_SIZE + 3):
        key = {"Idempotency-Key": str(uuid.uuid4())}
        body = {"name": "Switchover", "slug": unique_slug("sw")}
        resp = await client.post("/api/v1/tenants", json=body, headers=headers | key)
        data = await resp.json()
        statuses.append(resp.status)
        if resp.status == 503:
            assert resp.headers.get("Retry-After") == "1"
            assert data["error"]["code"] == "SERVICE_UNAVAILABLE"
        else:
            assert resp.status == 201, data
    # Each broken connection failed one request at most: it was discarded, not pooled.
    assert statuses.count(503) <= POOL_SIZE
    assert statuses[-3:] == [201, 201, 201]

    # Reads that meet a broken connection answer 503 too, and the pool recovers.
    await eventually(all_idle, within=10, interval=0.02)
    assert proxy.inject_error() >= POOL_SIZE
    await read_by_the_pool(pool)
    reads = []
    for _ in range(POOL_SIZE + 3):
        resp = await client.get("/api/v1/tenants", headers=headers)
        reads.append(resp.status)
        if resp.status == 503:
            assert resp.headers.get("Retry-After") == "1"
    assert set(reads) <= {200, 503}
    assert reads[-3:] == [200, 200, 200]
