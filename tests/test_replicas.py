"""Read replicas on a real streaming standby (tests/support/cluster.py): reads go to the
replica, a write's X-Consistency-Token sends the next read to a server that has the
write, a lagging or unreachable replica is skipped, and the metrics say so."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.db.consistency import decode_token, token_key
from service.db.replicas import Replica, ReplicaSet
from service.http.appkeys import DATABASE, READ_CACHE
from service.settings.options import Settings
from tests.conftest import HMAC_SECRET, base_env
from tests.support.api import create_tenant, unique_slug
from tests.support.cluster import Cluster, find_binaries, migrated_pair, streaming_cluster
from tests.support.databases import with_database
from tests.support.keys import key_headers
from tests.support.processes import free_port
from tests.support.webhooks import eventually

BINARIES, WHY = find_binaries()
# /metrics answers on the API port only to this bearer token.
METRICS_TOKEN = "replica-metrics-" + "kT9vQ2xLm4RzW8pN3sYb6HdJ"
pytestmark = pytest.mark.skipif(BINARIES is None, reason=WHY)
TOKEN = "X-Consistency-Token"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    assert BINARIES is not None
    yield from streaming_cluster(BINARIES)


@pytest.fixture(scope="module")
def databases(cluster: Cluster) -> tuple[str, str]:
    """A migrated database on the primary, and its DSN on the standby."""
    return migrated_pair(cluster)


def replica_settings(
    databases: tuple[str, str], tmp_path: Path, replicas: str, **env: str
) -> Settings:
    primary, _ = databases
    overrides = {"DATABASE_REPLICA_URLS": replicas, "DATABASE_REPLICA_CHECK_SECONDS": "0.1"}
    return Settings.from_env(base_env(primary, tmp_path, **(overrides | env)))


def page(*items: dict[str, Any]) -> dict[str, Any]:
    return {"data": list(items), "has_more": False, "next_cursor": None}


async def started(app: web.Application, aiohttp_client: Any) -> TestClient:
    client: TestClient = await aiohttp_client(app)
    return client


def the_replica(client: TestClient) -> tuple[ReplicaSet, Replica]:
    replicas = client.app[DATABASE].replicas
    return replicas, replicas.replicas[0]


async def wait_until(replicas: ReplicaSet, condition: Any) -> None:
    """Until a replica check leaves the condition true (bounded by the test timeout)."""
    async with asyncio.timeout(20):
        while not condition():
            await replicas.wait_checked()


@pytest.fixture
async def client(
    cluster: Cluster, databases: tuple[str, str], tmp_path: Path, aiohttp_client: Any
) -> AsyncIterator[TestClient]:
    settings = replica_settings(
        databases, tmp_path, databases[1], DATABASE_REPLICA_MAX_LAG_SECONDS="60"
    )
    client = await started(create_app(settings), aiohttp_client)
    yield client
    await cluster.resume_replay()


async def test_reads_go_to_the_replica_and_a_token_reads_its_own_write(
    cluster: Cluster, client: TestClient
) -> None:
    headers = await key_headers(client.app)
    replicas, replica = the_replica(client)
    other = await create_tenant(client, headers)
    await wait_until(replicas, lambda: replica.standby and replica.lag_seconds == 0)
    await cluster.pause_replay()
    slug = unique_slug()
    resp = await client.post("/api/v1/tenants", json={"name": "R", "slug": slug}, headers=headers)
    assert resp.status == 201
    created = await resp.json()
    token = resp.headers[TOKEN]
    # Every read of a write request is the primary's (a PUT answers what it stored).
    resp = await client.put(
        f"/api/v1/tenants/{other['id']}/config/plan", json={"value": "pro"}, headers=headers
    )
    assert resp.status in (200, 201)
    assert replica.requests == 0

    # Without the token: the paused replica answers (within the allowed lag).
    before = replica.requests
    resp = await client.get(f"/api/v1/tenants?slug={slug}", headers=headers)
    assert resp.status == 200
    assert await resp.json() == page()
    assert replica.requests == before + 1

    # With it: the replica has not replayed the write, so the primary answers.
    resp = await client.get(f"/api/v1/tenants?slug={slug}", headers=headers | {TOKEN: token})
    assert resp.status == 200
    assert await resp.json() == page(created)
    assert replica.skips["behind_token"] >= 1

    # Once replayed, the replica serves the token's reads.
    await cluster.resume_replay()
    await cluster.wait_replayed()
    position = decode_token(token, token_key(HMAC_SECRET.encode()))
    await wait_until(replicas, lambda: replica.replayed >= position and replica.lag_seconds == 0)
    served = replica.requests
    resp = await client.get(f"/api/v1/tenants?slug={slug}", headers=headers | {TOKEN: token})
    assert await resp.json() == page(created)
    assert replica.requests == served + 1


async def test_a_lagging_replica_is_skipped(
    cluster: Cluster, databases: tuple[str, str], tmp_path: Path, aiohttp_client: Any
) -> None:
    settings = replica_settings(
        databases,
        tmp_path,
        databases[1],
        DATABASE_REPLICA_MAX_LAG_SECONDS="0.5",
        METRICS_TOKEN=METRICS_TOKEN,
    )
    client = await started(create_app(settings), aiohttp_client)
    headers = await key_headers(client.app)
    replicas, replica = the_replica(client)
    await wait_until(replicas, lambda: replica.standby and replica.lag_seconds == 0)
    await cluster.pause_replay()
    try:
        created = await create_tenant(client, headers)
        await wait_until(replicas, lambda: replica.lag_seconds > 0.5)
        resp = await client.get(f"/api/v1/tenants?slug={created['slug']}", headers=headers)
        assert await resp.json() == page(created)
        assert replica.skips["lagging"] >= 1
        scraper = {"Authorization": f"Bearer {METRICS_TOKEN}"}
        metrics = await (await client.get("/metrics", headers=scraper)).text()
        assert (
            f'tenant_service_db_replica_skips_total{{reason="lagging",replica="{replica.label}"}}'
            in metrics
        )
    finally:
        await cluster.resume_replay()
    await wait_until(replicas, lambda: replica.lag_seconds == 0)


async def test_an_unreachable_replica_is_skipped_and_reads_use_the_primary(
    databases: tuple[str, str], tmp_path: Path, aiohttp_client: Any
) -> None:
    nowhere = with_database(f"postgresql://postgres@127.0.0.1:{free_port()}/x", "x")
    client = await started(
        create_app(replica_settings(databases, tmp_path, nowhere)), aiohttp_client
    )
    headers = await key_headers(client.app)
    created = await create_tenant(client, headers)
    resp = await client.get(f"/api/v1/tenants?slug={created['slug']}", headers=headers)
    assert await resp.json() == page(created)
    _, replica = the_replica(client)
    assert replica.pool is None
    assert replica.skips["down"] >= 1
    assert replica.down_until > 0


async def test_a_malformed_token_is_refused(client: TestClient) -> None:
    headers = await key_headers(client.app)
    resp = await client.get("/api/v1/tenants", headers=headers | {TOKEN: "not a token!"})
    assert resp.status == 400
    body = await resp.json()
    assert body["error"]["code"] == "VALIDATION_ERROR"


async def test_caches_never_serve_a_document_older_than_an_announcement(
    cluster: Cluster, databases: tuple[str, str], tmp_path: Path, aiohttp_client: Any
) -> None:
    """Two service processes, both with the paused replica: B has cached a tenant and its
    context; A changes them; once B has the announcement, B answers the new documents
    although its replica still holds the old rows (docs/scaling.md, "Caches")."""
    a = await started(
        create_app(replica_settings(databases, tmp_path, databases[1])), aiohttp_client
    )
    b = await started(
        create_app(replica_settings(databases, tmp_path, databases[1])), aiohttp_client
    )
    headers = await key_headers(a.app)
    tenant = await create_tenant(a, headers)
    await cluster.wait_replayed()
    for client in (a, b):
        replicas, replica = the_replica(client)
        await wait_until(replicas, lambda r=replica: r.standby and r.lag_seconds == 0)
    url = f"/api/v1/tenants/{tenant['id']}"
    assert (await b.get(url, headers=headers)).status == 200
    assert (await b.get(f"{url}/context", headers=headers)).status == 200
    await cluster.pause_replay()
    try:
        cache = b.app[READ_CACHE]
        generation = cache.generation
        resp = await a.patch(url, json={"name": "Renamed"}, headers=headers)
        assert resp.status == 200
        resp = await a.put(f"{url}/config/plan", json={"value": "pro"}, headers=headers)
        assert resp.status in (200, 201)

        async def announced() -> bool:  # both announcements reached B
            return cache.generation >= generation + 2

        await eventually(announced, within=20)
        got = await (await b.get(url, headers=headers)).json()
        assert got["name"] == "Renamed"
        context = await (await b.get(f"{url}/context", headers=headers)).json()
        assert context["resolved_config"]["plan"]["value"] == "pro"
    finally:
        await cluster.resume_replay()


async def test_a_replica_that_stops_is_skipped_and_used_again_once_back(
    cluster: Cluster, client: TestClient
) -> None:
    headers = await key_headers(client.app)
    replicas, replica = the_replica(client)
    await wait_until(replicas, lambda: replica.standby and replica.lag_seconds == 0)
    created = await create_tenant(client, headers)
    await asyncio.to_thread(cluster.standby.stop, "fast")
    try:
        resp = await client.get(f"/api/v1/tenants?slug={created['slug']}", headers=headers)
        assert await resp.json() == page(created)  # the primary answered
        assert replica.pool is None
        assert replica.down_until > 0
    finally:
        await asyncio.to_thread(cluster.standby.start)
    await cluster.wait_streaming()
    # Retried with backoff: usable again, it serves reads again.
    await wait_until(replicas, lambda: replica.pool is not None and replica.lag_seconds == 0)
    served = replica.requests
    resp = await client.get(f"/api/v1/tenants?slug={created['slug']}", headers=headers)
    assert await resp.json() == page(created)
    assert replica.requests == served + 1
