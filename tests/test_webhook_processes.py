"""Real `tenant-service serve` processes on one test database: a SIGKILL mid-delivery
loses nothing, two processes never attempt one delivery at once, SIGTERM lets attempts
finish or releases them. Free ports, bounded waits, processes always cleaned up."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from service.auth.principal import SYSTEM_ACTOR
from service.db.pool import connect
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import issue_api_key
from tests.conftest import HMAC_SECRET, base_env
from tests.support.processes import free_port
from tests.support.webhooks import Received, Receiver, eventually

pytestmark = pytest.mark.slow


async def admin_key(dsn: str) -> dict[str, str]:
    queries = Queries.load()
    repos = Repositories.build(queries)
    conn = await connect(dsn)
    try:
        async with conn.transaction():
            issued = await issue_api_key(
                conn, keys=repos.api_keys, recorder=ChangeRecorder(repos.outbox),
                hmac_secret=HMAC_SECRET.encode(), actor=SYSTEM_ACTOR, name="processes",
                scopes=["read", "write", "admin"], environment="test",
            )  # fmt: skip
    finally:
        await conn.close()
    return {"X-API-Key": issued.plaintext}


class Service:
    """One `python -m service serve` process; its output goes to a file."""

    def __init__(self, name: str, env: dict[str, str], folder: Path) -> None:
        self.name = name
        self.port = free_port()
        self.env = {**env, "PORT": str(self.port), "HOST": "127.0.0.1"}
        self.log = folder / f"{name}.log"
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, session: aiohttp.ClientSession) -> Service:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "service", "serve",
                env=self.env, stdout=out, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip

        async def ready() -> bool:
            assert self.proc is not None
            if self.proc.returncode is not None:
                raise AssertionError(f"{self.name} exited: {self.log.read_text()[-2000:]}")
            try:
                async with session.get(f"{self.base}/ready") as resp:
                    return resp.status == 200
            except aiohttp.ClientError:
                return False

        await eventually(ready, within=15, interval=0.1)
        return self

    async def signal(self, signum: int) -> int:
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.send_signal(signum)
        return await asyncio.wait_for(self.proc.wait(), 15)

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    def attempts_logged(self) -> int:
        return self.log.read_text().count('"delivery succeeded"')


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


@pytest.fixture
async def services() -> AsyncIterator[list[Service]]:
    started: list[Service] = []
    yield started
    for service in started:
        await service.kill()


def service_env(dsn: str, folder: Path, **overrides: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEBHOOK_", "DB_"))}
    env.update(
        base_env(
            dsn, folder, WEBHOOK_ALLOW_HTTP="true", WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_TIMEOUT_SECONDS="1", WEBHOOK_RETRY_BASE_SECONDS="0.2", LOG_LEVEL="info",
            DB_POOL_MAX_SIZE="4", **overrides,
        )
    )  # fmt: skip
    return env


async def call(
    session: aiohttp.ClientSession, method: str, url: str, headers: dict[str, str], body: Any
) -> Any:
    async with session.request(method, url, json=body, headers=headers) as resp:
        data = await resp.json()
        assert resp.status in (200, 201), data
        return data


async def deliveries(dsn: str) -> list[Any]:
    conn = await connect(dsn)
    try:
        return list(await conn.fetch("SELECT * FROM webhook_deliveries ORDER BY id"))
    finally:
        await conn.close()


async def create_tenants(
    session: aiohttp.ClientSession, service: Service, headers: dict[str, str], prefix: str, n: int
) -> None:
    batch = {"tenants": [{"name": f"T{i}", "slug": f"{prefix}_{i}"} for i in range(n)]}
    await call(session, "POST", f"{service.base}/api/v1/tenants/batch", headers, batch)


async def test_sigkill_mid_delivery_loses_nothing(fresh_db_url, tmp_path, session, services):
    async def slow(received: Received, seen: int) -> int:
        await asyncio.sleep(0.4)
        return 200

    receiver = await Receiver(slow).start()
    try:
        headers = await admin_key(fresh_db_url)
        env = service_env(fresh_db_url, tmp_path, WEBHOOK_CONCURRENCY="4")
        first = await Service("first", env, tmp_path).start(session)
        services.append(first)
        hook = {"url": receiver.url, "events": ["tenant.created"]}
        created = await call(session, "POST", f"{first.base}/api/v1/webhooks", headers, hook)
        await create_tenants(session, first, headers, "kill", 12)

        async def in_flight() -> bool:
            return len(receiver.requests) >= 2

        await eventually(in_flight)
        await first.kill()  # SIGKILL: no chance to finish or release anything
        rows = await deliveries(fresh_db_url)
        assert len(rows) == 12
        assert any(r["leased_by"] is not None for r in rows), "nothing was in flight"

        second = await Service("second", env, tmp_path).start(session)
        services.append(second)

        async def all_delivered() -> bool:
            return all(r["status"] == "success" for r in await deliveries(fresh_db_url))

        await eventually(all_delivered, within=20, interval=0.2)
        rows = await deliveries(fresh_db_url)
        ids = {str(r["id"]) for r in rows}
        received_ids = {r.delivery_id for r in receiver.requests}
        assert received_ids == ids  # every delivery arrived, nothing else did
        by_tenant: dict[str, set[str]] = {}
        for request in receiver.requests:
            by_tenant.setdefault(request.json["data"]["id"], set()).add(request.delivery_id)
        # Duplicates only ever under the same delivery id.
        assert len(by_tenant) == 12
        assert all(len(v) == 1 for v in by_tenant.values())
        assert await second.signal(signal.SIGTERM) == 0
        logs = first.log.read_text() + second.log.read_text()
        assert second.attempts_logged() > 0
        assert created["secret"] not in logs
        for request in receiver.requests:
            assert request.headers["X-Service-Signature"] not in logs
            assert request.headers["webhook-signature"] not in logs
    finally:
        await receiver.close()


async def test_two_processes_share_the_queue_without_overlap(
    fresh_db_url, tmp_path, session, services
):
    active: set[str] = set()
    overlaps: list[str] = []

    async def fail_first(received: Received, seen: int) -> int:
        if received.delivery_id in active:
            overlaps.append(received.delivery_id)
        active.add(received.delivery_id)
        try:
            await asyncio.sleep(0.15)
        finally:
            active.discard(received.delivery_id)
        return 500 if seen == 0 else 200

    receiver = await Receiver(fail_first).start()
    try:
        headers = await admin_key(fresh_db_url)
        env = service_env(fresh_db_url, tmp_path, WEBHOOK_CONCURRENCY="2")
        one = await Service("one", env, tmp_path).start(session)
        services.append(one)
        two = await Service("two", env, tmp_path).start(session)
        services.append(two)
        hook = {"url": receiver.url, "events": ["tenant.created"]}
        await call(session, "POST", f"{one.base}/api/v1/webhooks", headers, hook)
        await create_tenants(session, one, headers, "one", 10)
        await create_tenants(session, two, headers, "two", 10)

        async def all_delivered() -> bool:
            rows = await deliveries(fresh_db_url)
            return len(rows) == 20 and all(r["status"] == "success" for r in rows)

        await eventually(all_delivered, within=20, interval=0.2)
        assert overlaps == []
        rows = await deliveries(fresh_db_url)
        assert all(r["attempts"] == 2 for r in rows)
        counts = [len(receiver.for_delivery(str(r["id"]))) for r in rows]
        assert counts == [2] * 20  # no delivery was ever attempted twice for one failure
        assert one.attempts_logged() > 0
        assert two.attempts_logged() > 0

        # SIGTERM while attempts are in flight: they finish (or are released), exit 0.
        receiver.behaviour = slow_ok
        await create_tenants(session, two, headers, "term", 6)

        async def in_flight() -> bool:
            return len(receiver.requests) > 40

        await eventually(in_flight)
        codes = await asyncio.gather(one.signal(signal.SIGTERM), two.signal(signal.SIGTERM))
        assert list(codes) == [0, 0]
        rows = await deliveries(fresh_db_url)
        assert len(rows) == 26
        assert all(r["leased_by"] is None for r in rows)  # nothing left claimed
        answered = {
            r.delivery_id
            for r in receiver.requests
            if r.status == 200 and r.json["data"]["slug"].startswith("term_")
        }
        assert answered  # attempts were in flight when SIGTERM came
        for row in rows:
            if str(row["id"]) in answered:
                assert row["status"] == "success"  # finished and recorded before exit
            else:
                assert row["status"] in ("success", "pending")
                if row["status"] == "pending":
                    assert row["attempts"] == 0  # released, not counted, due again
    finally:
        await receiver.close()


async def slow_ok(received: Received, seen: int) -> int:
    await asyncio.sleep(0.3)
    return 200
