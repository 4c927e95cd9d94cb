"""In-flight requests through PgBouncer when its server goes away (a postmaster killed):
PgBouncer queues every query while it cannot log in to a server, for
query_wait_timeout, so with the example's few seconds (docs/examples/ha/pgbouncer.ini)
each request answers 503 with Retry-After within that bound instead of waiting for the
server to come back; with server_login_retry = 1 writes work again within a few
seconds of the server's return. Never a 500."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, unique_slug
from tests.support.cluster import Cluster, create_database, find_binaries
from tests.support.keys import key_headers
from tests.support.pgbouncer import PgBouncer, skip_reason
from tests.support.tcp_proxy import TcpProxy
from tests.support.webhooks import eventually

BINARIES, WHY = find_binaries()
pytestmark = [
    pytest.mark.skipif(BINARIES is None, reason=WHY),
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]
QUERY_WAIT_SECONDS = 2
# PgBouncer's queue bound, plus its once-a-second timer and the request's own work.
ANSWER_BOUND_SECONDS = QUERY_WAIT_SECONDS + 2.5


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
    assert BINARIES is not None
    built = Cluster(BINARIES).build(standby=False)
    try:
        yield built
    finally:
        built.close()


async def test_requests_in_flight_when_the_server_goes_away_answer_503_within_a_bound(
    server: Cluster, tmp_path: Path, aiohttp_client: Any
) -> None:
    proxy = TcpProxy("127.0.0.1", server.primary.port)  # the server's host, to cut
    await proxy.start()
    bouncer = PgBouncer(
        proxy.port,
        pool_size=3,
        settings={
            "query_wait_timeout": str(QUERY_WAIT_SECONDS),
            "server_login_retry": "1",
            "server_connect_timeout": "2",
        },
    )
    try:
        direct = await create_database(server.primary, f"tsvc_out_{uuid.uuid4().hex[:8]}")
        name = direct.rsplit("/", 1)[1]
        env = base_env(
            bouncer.dsn_for(name), tmp_path, DATABASE_PGBOUNCER="true",
            DATABASE_LISTEN_URL=direct, WEBHOOK_CONCURRENCY="0", READ_CACHE_SIZE="0",
        )  # fmt: skip
        client: TestClient = await aiohttp_client(create_app(Settings.from_env(env)))
        headers = await key_headers(client.app)
        tenant = await create_tenant(client, headers)
        path = f"/api/v1/tenants/{tenant['id']}"

        statuses: Counter[int] = Counter()
        slowest = 0.0

        async def call(method: str) -> int:
            nonlocal slowest
            started = time.monotonic()
            if method == "POST":
                resp = await client.post(
                    "/api/v1/tenants", json={"name": "O", "slug": unique_slug("out")},
                    headers=headers | {"Idempotency-Key": str(uuid.uuid4())},
                    timeout=aiohttp.ClientTimeout(total=30),
                )  # fmt: skip
            else:
                resp = await client.get(path, headers=headers)
            slowest = max(slowest, time.monotonic() - started)
            statuses[resp.status] += 1
            if resp.status == 503:
                assert resp.headers["Retry-After"] == "1"
            else:
                assert resp.status in (200, 201), await resp.text()
            return resp.status

        await proxy.stop()  # every server connection cut, new ones refused
        results = await asyncio.gather(*(call(m) for m in ("POST", "GET") * 6))
        assert set(results) == {503}, results
        assert slowest < ANSWER_BOUND_SECONDS, slowest

        await proxy.start()  # the server is back, on the same address
        back = time.monotonic()

        async def writes_again() -> bool:
            return await call("POST") == 201

        await eventually(writes_again, within=10, interval=0.2)
        assert time.monotonic() - back < 5
        assert set(statuses) <= {200, 201, 503}
    finally:
        bouncer.close()
        await proxy.stop()
