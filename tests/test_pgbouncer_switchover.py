"""The switchover race through a real PgBouncer: writers with Idempotency-Key run while
PgBouncer's admin console kills the database (`KILL`, then `RESUME`), which is what it
does to its clients when their server goes away: it writes an ErrorResponse to each
client connection, idle ones included, and closes it. A pooled connection that met that
error answers 503 with Retry-After, never 500, and writes succeed again afterwards."""

from __future__ import annotations

import asyncio
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
from tests.support.api import unique_slug
from tests.support.cluster import Cluster, create_database, find_binaries
from tests.support.keys import key_headers
from tests.support.pgbouncer import PgBouncer, skip_reason
from tests.support.webhooks import eventually

BINARIES, WHY = find_binaries()
pytestmark = [
    pytest.mark.skipif(BINARIES is None, reason=WHY),
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]
WRITERS = 6
ROUNDS = 8


async def admin(bouncer: PgBouncer, command: str) -> None:
    """One command on PgBouncer's admin console (simple query protocol only: psql)."""
    process = await asyncio.create_subprocess_exec(
        "psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(bouncer.port), "-U", "postgres",
        "-d", "pgbouncer", "-c", command,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=30)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, (command, out, err)


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
    # A server of the test's own on a TCP port: the embedded test server listens on a
    # socket directory that PgBouncer, running as another OS user, may not enter.
    assert BINARIES is not None
    built = Cluster(BINARIES).build(standby=False)
    try:
        yield built
    finally:
        built.close()


async def test_writers_through_pgbouncer_killing_its_clients_never_get_a_500(
    server: Cluster, tmp_path: Path, aiohttp_client: Any
) -> None:
    bouncer = PgBouncer(
        server.primary.port, pool_size=4,
        settings={"admin_users": "postgres", "server_login_retry": "1"},
    )  # fmt: skip
    try:
        direct = await create_database(server.primary, f"tsvc_sw_{uuid.uuid4().hex[:8]}")
        name = direct.rsplit("/", 1)[1]
        env = base_env(
            bouncer.dsn_for(name), tmp_path, DATABASE_PGBOUNCER="true",
            DB_POOL_MIN_SIZE="4", DB_POOL_MAX_SIZE="4",
            DATABASE_LISTEN_URL=direct, WEBHOOK_CONCURRENCY="0",
        )  # fmt: skip
        client: TestClient = await aiohttp_client(create_app(Settings.from_env(env)))
        headers = await key_headers(client.app)
        statuses: Counter[int] = Counter()
        bodies: list[str] = []
        written = asyncio.Event()
        stop = asyncio.Event()

        async def write() -> int:
            resp = await client.post(
                "/api/v1/tenants", json={"name": "S", "slug": unique_slug("sw")},
                headers=headers | {"Idempotency-Key": str(uuid.uuid4())},
                timeout=aiohttp.ClientTimeout(total=30),
            )  # fmt: skip
            statuses[resp.status] += 1
            if resp.status == 503:
                assert resp.headers.get("Retry-After") == "1"
            elif resp.status != 201:
                bodies.append(await resp.text())
            else:
                written.set()
            return resp.status

        async def writer() -> None:
            while not stop.is_set():
                await write()

        writers = [asyncio.create_task(writer()) for _ in range(WRITERS)]
        try:
            for _ in range(ROUNDS):
                # A write got through since the last kill: the pool is in use again.
                written.clear()
                await asyncio.wait_for(written.wait(), timeout=15)
                await admin(bouncer, f"KILL {name}")
                await admin(bouncer, f"RESUME {name}")
            written.clear()
            await asyncio.wait_for(written.wait(), timeout=15)
        finally:
            stop.set()
            await asyncio.gather(*writers)

        assert set(statuses) <= {201, 503}, (statuses, bodies[:3])
        assert statuses[201] > 0

        async def writes_again() -> bool:
            return await write() == 201

        await eventually(writes_again, within=10, interval=0.2)
    finally:
        bouncer.close()
