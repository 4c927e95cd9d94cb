"""Reads through a primary outage, on a real streaming standby (tests/support/cluster.py):
with the primary stopped, reads without a consistency token are answered by the replica
(an API key checked there too), writes answer 503 with Retry-After, /ready says the
primary is down and /ready/reads that reads go on, so a balancer keeps routing them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.http.appkeys import DATABASE
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant
from tests.support.cluster import Cluster, find_binaries, migrated_pair, streaming_cluster
from tests.support.keys import key_headers

BINARIES, WHY = find_binaries()
pytestmark = pytest.mark.skipif(BINARIES is None, reason=WHY)
# A read in the outage is answered at once, not after waiting for the primary.
READ_BOUND_SECONDS = 1.0


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    assert BINARIES is not None
    yield from streaming_cluster(BINARIES)


async def test_reads_without_a_token_are_served_by_the_replica_while_the_primary_is_down(
    cluster: Cluster, tmp_path: Path, aiohttp_client: Any
) -> None:
    primary, standby = await asyncio.to_thread(migrated_pair, cluster)
    env = base_env(
        primary, tmp_path, DATABASE_REPLICA_URLS=standby, DATABASE_REPLICA_CHECK_SECONDS="0.1",
        DB_ACQUIRE_TIMEOUT_SECONDS="3", WEBHOOK_CONCURRENCY="0",
    )  # fmt: skip
    client: TestClient = await aiohttp_client(create_app(Settings.from_env(env)))
    headers = await key_headers(client.app)
    first = await create_tenant(client, headers)
    second = await create_tenant(client, headers, parent_id=first["id"])
    await cluster.wait_replayed()
    replicas = client.app[DATABASE].replicas
    await replicas.wait_checked()
    resp = await client.get("/ready/reads")
    assert (resp.status, await resp.json()) == (
        200,
        {"status": "ok", "reads": "primary", "writes": "ok"},
    )

    await asyncio.to_thread(cluster.primary.stop, "immediate")

    for tenant in (first, second, first, second):
        started = time.monotonic()
        resp = await client.get(f"/api/v1/tenants/{tenant['id']}", headers=headers)
        took = time.monotonic() - started
        assert resp.status == 200, await resp.text()
        assert (await resp.json())["id"] == tenant["id"]
        assert took < READ_BOUND_SECONDS, took
    resp = await client.get(f"/api/v1/tenants/{first['id']}/children", headers=headers)
    assert resp.status == 200, await resp.text()
    assert [c["id"] for c in await resp.json()] == [second["id"]]

    resp = await client.post("/api/v1/tenants", json={"name": "X", "slug": "x"}, headers=headers)
    assert resp.status == 503, await resp.text()
    assert resp.headers["Retry-After"] == "1"

    resp = await client.get("/ready")
    assert (resp.status, await resp.json()) == (
        503,
        {"status": "unavailable", "database": "unreachable"},
    )
    resp = await client.get("/ready/reads")
    assert (resp.status, await resp.json()) == (
        200,
        {"status": "ok", "reads": "replica", "writes": "unavailable"},
    )
