"""Faults: PostgreSQL crashes and restarts under mixed traffic, every pooled connection is
held by slow queries, Redis is gone or hangs. Requests answer 503 with Retry-After
(never a 500, never a hang past a bound), the service recovers by itself, and afterwards
every acknowledged change is there with its audit entry, its event and its delivered
webhook. The PostgreSQL that crashes is the test's own (tests/support/own_postgres.py)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, unique_slug
from tests.support.databases import create_database, create_template
from tests.support.fault_servers import Blackhole, FreezingProxy, ResettingProxy
from tests.support.invariants import tree_problems
from tests.support.keys import key_headers
from tests.support.own_postgres import OwnPostgres
from tests.support.processes import free_port
from tests.support.tcp_proxy import postgres_opener
from tests.support.webhooks import Receiver, eventually

# No request may take longer than this, whatever the database does.
REQUEST_BOUND = aiohttp.ClientTimeout(total=20)
EVENTS = ["tenant.created", "tenant.moved", "config.updated"]


@pytest.fixture
def own_database() -> Iterator[tuple[OwnPostgres, str]]:
    server = OwnPostgres()
    try:
        yield server, create_database(server.dsn, create_template(server.dsn))
    finally:
        server.cleanup()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    started = await Receiver().start()
    yield started
    await started.close()


@dataclass
class Traffic:
    client: TestClient
    headers: dict[str, str]
    statuses: Counter[int] = field(default_factory=Counter)
    unavailable_without_retry_after: int = 0
    # slug -> acknowledged (2xx) or not; every logical create is retried with its key
    creates: dict[str, bool] = field(default_factory=dict)
    acked_config: dict[tuple[str, str], int] = field(default_factory=dict)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    successes_after_restart: int = 0
    restarted: bool = False

    async def call(self, method: str, path: str, body: Any = None, key: str | None = None) -> Any:
        headers = self.headers if key is None else {**self.headers, "Idempotency-Key": key}
        resp = await self.client.request(
            method, path, json=body, headers=headers, timeout=REQUEST_BOUND
        )
        data = await resp.json()
        self.statuses[resp.status] += 1
        if resp.status == 503:
            assert data["error"]["code"] == "SERVICE_UNAVAILABLE"
            if "Retry-After" not in resp.headers:
                self.unavailable_without_retry_after += 1
        elif resp.status < 300 and self.restarted:
            self.successes_after_restart += 1
        return resp.status, data

    async def worker(self, seed: int) -> None:
        rng = random.Random(seed)
        mine: list[str] = []
        counter = 0
        while not self.stop.is_set():
            op = "create" if len(mine) < 3 else rng.choice(["create", "config", "move", "read"])
            if op == "create":
                slug = unique_slug("f")
                body = {"name": "F", "slug": slug, "parent_id": rng.choice(mine) if mine else None}
                self.creates[slug] = False
                key = str(uuid.uuid4())
                while True:  # retried with the same key until acknowledged
                    status, data = await self.call("POST", "/api/v1/tenants", body, key)
                    if status == 201:
                        self.creates[slug] = True
                        mine.append(data["id"])
                        break
                    assert status == 503, data
                    if self.stop.is_set():
                        break
                    await asyncio.sleep(0.1)
            elif op == "config":
                counter += 1
                tenant = rng.choice(mine)
                path = f"/api/v1/tenants/{tenant}/config/w{seed}"
                status, data = await self.call("PUT", path, {"value": counter})
                if status < 300:
                    self.acked_config[(tenant, f"w{seed}")] = counter
            elif op == "move":
                node, parent = rng.sample(mine, 2)
                await self.call("POST", f"/api/v1/tenants/{node}/move", {"new_parent_id": parent})
            else:
                await self.call("GET", f"/api/v1/tenants/{rng.choice(mine)}/context")
            await asyncio.sleep(0.01)


async def wait_for(condition: Any, within: float) -> None:
    async def check() -> bool:
        return bool(condition())

    await eventually(check, within=within)


async def test_a_database_crash_and_restart_under_mixed_traffic(
    aiohttp_client: Any, tmp_path: Path, own_database: tuple[OwnPostgres, str], receiver: Receiver
) -> None:
    server, dsn = own_database
    settings = Settings.from_env(
        base_env(
            dsn, tmp_path, DB_POOL_MAX_SIZE="6", DB_ACQUIRE_TIMEOUT_SECONDS="1",
            WEBHOOK_ALLOW_HTTP="true", WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_RETRY_BASE_SECONDS="0.2", WEBHOOK_TIMEOUT_SECONDS="2",
            WEBHOOK_MAX_ATTEMPTS="20",
        )
    )  # fmt: skip
    client = await aiohttp_client(create_app(settings))
    headers = await key_headers(client.app)
    resp = await client.post(
        "/api/v1/webhooks", json={"url": receiver.url, "events": EVENTS}, headers=headers
    )
    hook = (await resp.json())["id"]
    traffic = Traffic(client, headers)
    workers = [asyncio.create_task(traffic.worker(n)) for n in range(6)]
    try:
        await wait_for(lambda: traffic.statuses[200] + traffic.statuses[201] >= 40, 60)
        await asyncio.to_thread(server.crash)
        await wait_for(lambda: traffic.statuses[503] >= 10, 30)
        await asyncio.sleep(1)
        await asyncio.to_thread(server.start)
        traffic.restarted = True
        await wait_for(lambda: traffic.successes_after_restart >= 40, 60)
    finally:
        traffic.stop.set()
        await asyncio.gather(*workers)

    print("statuses:", dict(traffic.statuses), "creates:", len(traffic.creates))
    assert set(traffic.statuses) <= {200, 201, 409, 503}, traffic.statuses
    assert traffic.statuses[503] >= 10
    assert traffic.unavailable_without_retry_after == 0
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT slug, count(*) AS n FROM tenants GROUP BY slug")
        stored = {r["slug"]: r["n"] for r in rows}
        for slug, acknowledged in traffic.creates.items():
            # acknowledged: there, once; not acknowledged: at most once (never twice)
            assert stored.get(slug, 0) == 1 if acknowledged else stored.get(slug, 0) <= 1, slug
        for (tenant, key), value in traffic.acked_config.items():
            saved = await conn.fetchval(
                "SELECT value FROM config_entries WHERE tenant_id = $1 AND key = $2",
                uuid.UUID(tenant), key,
            )  # fmt: skip
            assert int(saved) >= value  # a later write may have committed unacknowledged
        assert await tree_problems(conn) == []
        # every committed change has its audit entry and its event (same transaction)...
        audits = Counter(
            (r["action"], r["tenant_id"])
            for r in await conn.fetch(
                "SELECT action, tenant_id FROM audit_logs WHERE action = ANY($1)", EVENTS
            )
        )
        events = Counter(
            (r["type"], r["tenant_id"])
            for r in await conn.fetch(
                "SELECT type, tenant_id FROM events WHERE type = ANY($1)", EVENTS
            )
        )
        assert audits == events
        created = await conn.fetchval("SELECT count(*) FROM tenants")
        assert audits[("tenant.created", None)] == 0
        assert sum(n for (a, _), n in audits.items() if a == "tenant.created") == created
        # ...and its delivery, which reaches the receiver: none is lost
        missing = await conn.fetchval(
            "SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d "
            "WHERE d.event_id = e.id AND d.webhook_id = $1)",
            uuid.UUID(hook),
        )
        assert missing == 0

        async def delivered() -> bool:
            pending = await conn.fetchval(
                "SELECT count(*) FROM webhook_deliveries WHERE status <> 'success'"
            )
            return pending == 0

        await eventually(delivered, within=60, interval=0.25)
        ids = {str(r["id"]) for r in await conn.fetch("SELECT id FROM webhook_deliveries")}
        assert ids <= {r.delivery_id for r in receiver.requests}
    finally:
        await conn.close()


@pytest.fixture
def settings_env(fresh_db_url: str) -> dict[str, str]:
    return {
        "DATABASE_URL": fresh_db_url,
        "DB_POOL_MIN_SIZE": "1",
        "DB_POOL_MAX_SIZE": "3",
        "DB_ACQUIRE_TIMEOUT_SECONDS": "0.5",
        "DB_STATEMENT_TIMEOUT_MS": "2000",
        # No delivery worker: every pooled connection is the requests' to exhaust.
        "WEBHOOK_CONCURRENCY": "0",
    }


async def test_pool_exhaustion_fails_fast_and_recovers(
    client: TestClient, admin, fresh_db_url: str
) -> None:
    tenant = await create_tenant(client, admin)
    # Children: a read that always queries (a single tenant may come from the read cache).
    path = f"/api/v1/tenants/{tenant['id']}/children"
    blocker = await asyncpg.connect(fresh_db_url)
    monitor = await asyncpg.connect(fresh_db_url)

    async def get() -> tuple[int, Any]:
        resp = await client.get(path, headers=admin, timeout=REQUEST_BOUND)
        return resp.status, (resp.headers.get("Retry-After"), await resp.json())

    async def waiting_on_the_lock() -> bool:
        # From another connection: pg_stat_activity is a snapshot per transaction, and
        # the blocker's transaction is the one holding the lock.
        count = await monitor.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND application_name = 'tenant-service'"
        )
        return int(count) == 3

    try:
        for release_after_timeout in (True, False):
            # Slow queries: each of the 3 pooled connections waits on a table lock.
            tx = blocker.transaction()
            await tx.start()
            await blocker.execute("LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE")
            slow = [asyncio.create_task(get()) for _ in range(3)]
            await eventually(waiting_on_the_lock, within=10)
            # Every further request fails fast: 503 while the slow ones still wait.
            fast = await asyncio.gather(*(get() for _ in range(5)))
            assert not any(task.done() for task in slow)
            for status, (retry_after, body) in fast:
                assert (status, body["error"]["code"], retry_after) == (
                    503, "SERVICE_UNAVAILABLE", "1"
                )  # fmt: skip
            if release_after_timeout:
                # The statement timeout bounds the slow ones: 503, not a hang.
                outcomes = await asyncio.gather(*slow)
                assert {status for status, _ in outcomes} == {503}
                await tx.rollback()
            else:
                await tx.rollback()
                outcomes = await asyncio.gather(*slow)
                assert {status for status, _ in outcomes} == {200}
            # Recovered: the pool serves again.
            results = await asyncio.gather(*(get() for _ in range(6)))
            assert {status for status, _ in results} == {200}
    finally:
        await blocker.close()
        await monitor.close()


@pytest.mark.parametrize("redis", ["nothing listens", "hangs"])
async def test_the_service_keeps_serving_without_redis(
    aiohttp_client: Any, db_url: str, tmp_path: Path, redis: str
) -> None:
    blackhole = Blackhole()
    await blackhole.start()
    port = free_port() if redis == "nothing listens" else blackhole.port
    try:
        settings = Settings.from_env(
            base_env(db_url, tmp_path, REDIS_URL=f"redis://127.0.0.1:{port}", RATE_LIMIT_MAX="50")
        )
        client = await aiohttp_client(create_app(settings))
        headers = await key_headers(client.app)
        parent = await create_tenant(client, headers)
        for n in range(10):
            resp = await client.post(
                "/api/v1/tenants",
                json={"name": f"r{n}", "slug": unique_slug("r"), "parent_id": parent["id"]},
                headers=headers,
                timeout=REQUEST_BOUND,
            )
            assert resp.status == 201, await resp.json()
            # limited per process meanwhile: the bucket still counts down
            assert int(resp.headers["X-RateLimit-Remaining"]) < 50
            resp = await client.get(
                f"/api/v1/tenants/{parent['id']}/children", headers=headers, timeout=REQUEST_BOUND
            )
            assert resp.status == 200
        assert len(await (await client.get(
            f"/api/v1/tenants/{parent['id']}/children", headers=headers)).json()) == 10  # fmt: skip
    finally:
        await blackhole.stop()


async def _each_call_answers_503(client: TestClient, path: str, headers: dict[str, str]) -> None:
    """Reads, writes and Idempotency-Key writes: each answers a JSON 503, none hangs."""
    calls = [
        client.get(path, headers=headers, timeout=REQUEST_BOUND),
        client.patch(path, json={"name": "n"}, headers=headers, timeout=REQUEST_BOUND),
        client.post(
            "/api/v1/tenants", json={"name": "s", "slug": unique_slug()},
            headers={**headers, "Idempotency-Key": str(uuid.uuid4())}, timeout=REQUEST_BOUND,
        ),
    ]  # fmt: skip
    for resp in await asyncio.gather(*calls):
        assert resp.content_type == "application/json", await resp.text()
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (503, "SERVICE_UNAVAILABLE")
        assert resp.headers["Retry-After"] == "1"


async def _serves_again(client: TestClient, path: str, headers: dict[str, str]) -> None:
    async def serving() -> bool:
        resp = await client.get(path, headers=headers, timeout=REQUEST_BOUND)
        return resp.status == 200

    await eventually(serving, within=30, interval=0.2)


async def _through(
    proxy: FreezingProxy | ResettingProxy,
    aiohttp_client: Any,
    db_url: str,
    tmp_path: Path,
    **env: str,
) -> tuple[TestClient, dict[str, str], str]:
    """The app on the database behind `proxy`, its admin headers and a tenant's path."""
    name = urlsplit(db_url).path.lstrip("/")
    through_proxy = f"postgresql://postgres@127.0.0.1:{proxy.port}/{name}"
    settings = Settings.from_env(
        base_env(through_proxy, tmp_path, DB_POOL_MAX_SIZE="4", WEBHOOK_CONCURRENCY="0", **env)
    )
    client = await aiohttp_client(create_app(settings))
    headers = await key_headers(client.app)
    tenant = await create_tenant(client, headers)
    return client, headers, f"/api/v1/tenants/{tenant['id']}"


async def test_a_silent_database_answers_503_within_a_bound(
    aiohttp_client: Any, fresh_db_url: str, tmp_path: Path
) -> None:
    proxy = FreezingProxy(postgres_opener(fresh_db_url))
    await proxy.start()
    try:
        client, headers, path = await _through(
            proxy, aiohttp_client, fresh_db_url, tmp_path,
            DB_STATEMENT_TIMEOUT_MS="1000", DB_ACQUIRE_TIMEOUT_SECONDS="1",
        )  # fmt: skip
        proxy.flowing.clear()
        await _each_call_answers_503(client, path, headers)
        proxy.flowing.set()
        await _serves_again(client, path, headers)
    finally:
        proxy.flowing.set()
        await proxy.stop()


async def test_a_database_that_resets_connections_answers_503(
    aiohttp_client: Any, fresh_db_url: str, tmp_path: Path
) -> None:
    """A server dying under its clients resets their connections and the new ones: the
    reset surfaces as ConnectionResetError, which must answer 503, not aiohttp's 500."""
    proxy = ResettingProxy(postgres_opener(fresh_db_url))
    await proxy.start()
    try:
        client, headers, path = await _through(
            proxy, aiohttp_client, fresh_db_url, tmp_path, DB_ACQUIRE_TIMEOUT_SECONDS="2"
        )
        proxy.reset_everything()
        await _each_call_answers_503(client, path, headers)
        proxy.resetting = False
        await _serves_again(client, path, headers)
    finally:
        await proxy.stop()
