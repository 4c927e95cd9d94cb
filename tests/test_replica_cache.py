"""The read cache filled from a real streaming standby (tests/support/cluster.py): a
tenant document or context read from an up-to-date replica is cached; one read from a
replica whose replay is paused behind a change this process has heard is read again on
the primary, which answers and fills the cache, while fills of tenants the change does
not touch still come from the paused replica (docs/scaling.md, "Caches")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.caches.read_cache import ReadCache
from service.http.appkeys import DATABASE, READ_CACHE, REPOSITORIES
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant
from tests.support.cluster import Cluster, find_binaries, migrated_pair, streaming_cluster
from tests.support.entries import context, put_config
from tests.support.keys import key_headers

BINARIES, WHY = find_binaries()
pytestmark = pytest.mark.skipif(BINARIES is None, reason=WHY)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    assert BINARIES is not None
    yield from streaming_cluster(BINARIES)


@pytest.fixture(scope="module")
def databases(cluster: Cluster) -> tuple[str, str]:
    """A migrated database on the primary, and its DSN on the standby."""
    return migrated_pair(cluster)


@pytest.fixture
async def client(
    cluster: Cluster, databases: tuple[str, str], tmp_path: Path, aiohttp_client: Any
) -> AsyncIterator[TestClient]:
    primary, standby = databases
    env = {
        "DATABASE_REPLICA_URLS": standby,
        "DATABASE_REPLICA_CHECK_SECONDS": "0.1",
        "DATABASE_REPLICA_MAX_LAG_SECONDS": "60",
    }
    settings = Settings.from_env(base_env(primary, tmp_path, **env))
    client: TestClient = await aiohttp_client(create_app(settings))
    yield client
    await cluster.resume_replay()


def servers(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Where each cache-filling read ran: "replica" or "primary", in order."""
    seen: list[str] = []
    repos = client.app[REPOSITORIES]
    for repo, name in ((repos.tenants, "get_tenant"), (repos.context, "render_tenant_context")):
        original = getattr(repo, name)

        async def recording(conn: Any, tenant_id: UUID, original: Any = original) -> Any:
            standby = await conn.fetchval("SELECT pg_is_in_recovery()")
            seen.append("replica" if standby else "primary")
            return await original(conn, tenant_id)

        monkeypatch.setattr(repo, name, recording)
    return seen


async def caught_up(cluster: Cluster, client: TestClient) -> None:
    """Every change heard has its primary position, the standby has replayed past all of
    them, and the service's checker counts the replica as usable."""
    await client.app[READ_CACHE].wait_positioned()
    await cluster.wait_replayed()
    replicas = client.app[DATABASE].replicas
    replica = replicas.replicas[0]
    async with asyncio.timeout(20):
        while not (replica.standby and replica.lag_seconds == 0):
            await replicas.wait_checked()


def cached_body(cache: ReadCache, kind: Any, tenant_id: str) -> dict[str, Any] | None:
    entry = cache.get(kind, UUID(tenant_id))
    return None if entry is None else orjson.loads(entry.rendered.body)


async def test_fills_from_an_up_to_date_replica_are_cached(
    cluster: Cluster, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = await key_headers(client.app)
    tenant = await create_tenant(client, headers)
    await put_config(client, headers, tenant["id"], "plan", "basic")
    await caught_up(cluster, client)
    seen = servers(client, monkeypatch)
    cache = client.app[READ_CACHE]
    url = f"/api/v1/tenants/{tenant['id']}"
    for _ in range(3):
        resp = await client.get(url, headers=headers)
        assert resp.status == 200
        assert (await resp.json())["name"] == tenant["name"]
        assert (await context(client, headers, tenant["id"]))["resolved_config"]["plan"][
            "value"
        ] == "basic"
    assert seen == ["replica", "replica"]  # one fill each, then cache hits
    assert cached_body(cache, "tenant", tenant["id"]) is not None
    assert cached_body(cache, "context", tenant["id"]) is not None


async def test_a_replica_behind_a_heard_change_neither_answers_nor_fills_for_it(
    cluster: Cluster, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = await key_headers(client.app)
    changed = await create_tenant(client, headers)
    untouched = await create_tenant(client, headers)
    await put_config(client, headers, changed["id"], "plan", "basic")
    await caught_up(cluster, client)
    await cluster.pause_replay()
    url = f"/api/v1/tenants/{changed['id']}"
    resp = await client.patch(url, json={"name": "Renamed"}, headers=headers)
    assert resp.status == 200
    await put_config(client, headers, changed["id"], "plan", "pro")
    cache = client.app[READ_CACHE]
    # The writes waited for their announcements; their primary positions follow.
    await cache.wait_positioned()
    seen = servers(client, monkeypatch)

    # The paused replica still has the old rows: the primary answers and fills.
    assert (await (await client.get(url, headers=headers)).json())["name"] == "Renamed"
    assert (await context(client, headers, changed["id"]))["resolved_config"]["plan"][
        "value"
    ] == "pro"
    assert seen == ["replica", "primary", "replica", "primary"]
    assert (cached_body(cache, "tenant", changed["id"]) or {})["name"] == "Renamed"
    # A tenant the change does not touch: the paused replica's read is cached.
    seen.clear()
    other = f"/api/v1/tenants/{untouched['id']}"
    assert (await (await client.get(other, headers=headers)).json())["name"] == untouched["name"]
    assert seen == ["replica"]
    assert cached_body(cache, "tenant", untouched["id"]) is not None

    await cluster.resume_replay()
    await caught_up(cluster, client)
    seen.clear()
    assert (await (await client.get(url, headers=headers)).json())["name"] == "Renamed"
    assert seen == []  # the primary's fill was cached
