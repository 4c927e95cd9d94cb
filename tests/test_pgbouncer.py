"""The service through Debian's PgBouncer in transaction pooling mode (1.18 in Debian
12: no max_prepared_statements, so DATABASE_PGBOUNCER turns asyncpg's statement cache
off). Migrations and LISTEN use the direct DATABASE_LISTEN_URL; everything else shares
a few server connections with concurrent requests, held Idempotency-Key transactions
included."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.http.appkeys import AUTHENTICATOR
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, unique_slug
from tests.support.cluster import Cluster, create_database, find_binaries
from tests.support.keys import key_headers
from tests.support.pgbouncer import PgBouncer, skip_reason

BINARIES, WHY = find_binaries()
pytestmark = [
    pytest.mark.skipif(BINARIES is None, reason=WHY),
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
    assert BINARIES is not None
    built = Cluster(BINARIES).build(standby=False)
    try:
        yield built
    finally:
        built.close()


@pytest.fixture(scope="module")
def bouncer(server: Cluster) -> Iterator[PgBouncer]:
    started = PgBouncer(server.primary.port, pool_size=3)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
async def client(
    server: Cluster, bouncer: PgBouncer, tmp_path: Path, aiohttp_client: Any
) -> TestClient:
    # An empty database: the start migrates it over the direct connection.
    direct = await create_database(server.primary, f"tsvc_bouncer_{uuid.uuid4().hex[:8]}")
    name = direct.rsplit("/", 1)[1]
    env = base_env(
        bouncer.dsn_for(name),
        tmp_path,
        DATABASE_PGBOUNCER="true",
        DATABASE_LISTEN_URL=direct,
        DB_POOL_MAX_SIZE="20",
    )
    result: TestClient = await aiohttp_client(create_app(Settings.from_env(env)))
    return result


async def test_the_service_runs_through_pgbouncer_in_transaction_mode(client: TestClient) -> None:
    listener = client.app[AUTHENTICATOR].listener
    assert listener is not None
    await asyncio.wait_for(listener.connected.wait(), 10)  # LISTEN on the direct URL
    headers = await key_headers(client.app)
    root = await create_tenant(client, headers)
    # More concurrent requests than PgBouncer has server connections (3).
    children = await asyncio.gather(
        *(create_tenant(client, headers, parent_id=root["id"]) for _ in range(24))
    )
    resp = await client.get(f"/api/v1/tenants/{root['id']}/children", headers=headers)
    assert resp.status == 200
    listed = await resp.json()
    assert sorted(c["id"] for c in listed) == sorted(c["id"] for c in children)

    # A held Idempotency-Key transaction, then its replay.
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"name": "Held", "slug": unique_slug()}
    first = await client.post("/api/v1/tenants", json=body, headers=headers | key)
    again = await client.post("/api/v1/tenants", json=body, headers=headers | key)
    assert (first.status, again.status) == (201, 201)
    assert await first.json() == await again.json()

    # Writes that run several statements in one transaction, and the context read.
    resp = await client.put(
        f"/api/v1/tenants/{root['id']}/config/plan", json={"value": "pro"}, headers=headers
    )
    assert resp.status in (200, 201), await resp.text()
    resp = await client.get(f"/api/v1/tenants/{children[0]['id']}/context", headers=headers)
    assert resp.status == 200
    context = await resp.json()
    assert context["resolved_config"]["plan"] == {
        "key": "plan",
        "value": "pro",
        "source_tenant_id": root["id"],
        "inherited": True,
        "locked": False,
    }
