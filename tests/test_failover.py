"""Failover on a real cluster with synchronous replication (tests/support/cluster.py):
DATABASE_URL names both hosts with target_session_attrs=read-write; the primary dies
under write traffic and the standby is promoted, as Patroni would. Writes caught in
between answer 503 with Retry-After (never a 500, never a wrong answer); writes work
again within 10 s of the promotion without a restart; every acknowledged write is on
the new primary; the change listener (and with it the key and read caches) and the
webhook worker recover."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.http.appkeys import AUTHENTICATOR, READ_CACHE
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import unique_slug
from tests.support.cluster import Cluster, find_binaries, streaming_cluster
from tests.support.databases import create_database, create_template
from tests.support.keys import key_headers
from tests.support.webhooks import Receiver, eventually

BINARIES, WHY = find_binaries()
pytestmark = pytest.mark.skipif(BINARIES is None, reason=WHY)
REQUEST_BOUND = aiohttp.ClientTimeout(total=20)
RECOVERY_BOUND_SECONDS = 10.0


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    assert BINARIES is not None
    yield from streaming_cluster(BINARIES, synchronous=True)


@pytest.fixture
def database(cluster: Cluster) -> str:
    """A migrated database on the primary (its name)."""
    dsn = create_database(cluster.primary.dsn, create_template(cluster.primary.dsn))
    return urlsplit(dsn).path.lstrip("/")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    started = await Receiver().start()
    yield started
    await started.close()


def both_hosts(cluster: Cluster, database: str) -> str:
    hosts = f"127.0.0.1:{cluster.primary.port},127.0.0.1:{cluster.standby.port}"
    return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"


class Writes:
    """Tenants created one after another; what each request answered."""

    def __init__(self, client: TestClient, headers: dict[str, str]) -> None:
        self.client, self.headers = client, headers
        self.statuses: Counter[int] = Counter()
        self.acknowledged: list[str] = []
        self.first_success_after: dict[float, float] = {}
        self.stop = asyncio.Event()
        self.problems: list[str] = []

    async def run(self) -> None:
        while not self.stop.is_set():
            body = {"name": "Failover", "slug": unique_slug("fo")}
            resp = await self.client.post(
                "/api/v1/tenants", json=body, headers=self.headers, timeout=REQUEST_BOUND
            )
            data = await resp.json()
            self.statuses[resp.status] += 1
            if resp.status == 201:
                self.acknowledged.append(data["id"])
            elif resp.status == 503:
                if resp.headers.get("Retry-After") is None:
                    self.problems.append("503 without Retry-After")
                await asyncio.sleep(0.05)  # as a client honouring Retry-After would, sooner
            else:
                self.problems.append(f"{resp.status}: {data}")


async def test_writes_survive_a_failover_with_none_acknowledged_lost(
    cluster: Cluster, database: str, tmp_path: Path, aiohttp_client: Any, receiver: Receiver
) -> None:
    name = database
    settings = Settings.from_env(
        base_env(
            both_hosts(cluster, name), tmp_path, DB_ACQUIRE_TIMEOUT_SECONDS="2",
            WEBHOOK_ALLOW_HTTP="true", WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_RETRY_BASE_SECONDS="0.2", WEBHOOK_TIMEOUT_SECONDS="2",
        )
    )  # fmt: skip
    client: TestClient = await aiohttp_client(create_app(settings))
    headers = await key_headers(client.app)
    resp = await client.post(
        "/api/v1/webhooks", json={"url": receiver.url, "events": ["tenant.created"]},
        headers=headers,
    )  # fmt: skip
    assert resp.status == 201, await resp.text()
    listener = client.app[AUTHENTICATOR].listener
    assert listener is not None
    await asyncio.wait_for(listener.connected.wait(), 10)

    writes = Writes(client, headers)
    task = asyncio.create_task(writes.run())
    try:
        await eventually(lambda: _at_least(len(writes.acknowledged), 20), within=30)
        await asyncio.to_thread(cluster.primary.stop, "immediate")
        await eventually(lambda: _at_least(writes.statuses[503], 1), within=30)
        # One writer, one request at a time: none is in flight on the old primary now.
        before = len(writes.acknowledged)
        promoting = time.monotonic()
        await asyncio.to_thread(cluster.standby.promote)
        await eventually(
            lambda: _at_least(len(writes.acknowledged), before + 1), within=RECOVERY_BOUND_SECONDS
        )
        recovered_in = time.monotonic() - promoting
        await eventually(lambda: _at_least(len(writes.acknowledged), before + 20), within=30)
    finally:
        writes.stop.set()
        await task
    assert writes.problems == []
    assert recovered_in < RECOVERY_BOUND_SECONDS
    assert set(writes.statuses) <= {201, 503}

    # Every acknowledged write is on the new primary (synchronous replication).
    conn = await asyncpg.connect(cluster.standby.dsn_for(name))
    try:
        assert await conn.fetchval("SELECT pg_is_in_recovery()") is False
        stored = await conn.fetchval(
            "SELECT count(*) FROM tenants WHERE id = ANY($1::uuid[])", writes.acknowledged
        )
    finally:
        await conn.close()
    assert stored == len(writes.acknowledged)

    # The listener reconnected to the new primary, so the caches are trusted again;
    # the webhook worker delivers a change made after the failover.
    await asyncio.wait_for(listener.connected.wait(), 10)
    assert client.app[READ_CACHE].enabled
    last = writes.acknowledged[-1]

    async def delivered() -> bool:
        return any(r.json["data"]["id"] == last for r in receiver.requests if r.status == 200)

    await eventually(delivered, within=30)


async def _at_least(value: int, target: int) -> bool:
    return value >= target
