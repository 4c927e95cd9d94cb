"""Two real service processes sharing one database and one Redis: one rate-limit bucket
for both, and a key revoked (or given a role) through one is seen by the other within
a second. Their logs never carry a key."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
import redis

from service.auth.principal import SYSTEM_ACTOR
from service.db.pool import connect
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import issue_api_key
from tests.conftest import HMAC_SECRET, base_env
from tests.support.processes import ServiceProcess, running_services

REDIS_URL = "redis://127.0.0.1:6379"


@dataclass
class Cluster:
    services: list[ServiceProcess]
    admin: dict[str, str]
    plaintexts: list[str] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.services]


async def _admin_key(dsn: str) -> str:
    queries = Queries.load()
    repos = Repositories.build(queries)
    conn = await connect(dsn)
    try:
        async with conn.transaction():
            issued = await issue_api_key(
                conn, keys=repos.api_keys, recorder=ChangeRecorder(repos.outbox),
                hmac_secret=HMAC_SECRET.encode(), actor=SYSTEM_ACTOR, name="cluster admin",
                scopes=["read", "write", "admin"],
            )  # fmt: skip
    finally:
        await conn.close()
    return issued.plaintext


@pytest.fixture(scope="module")
def cluster(db_url, tmp_path_factory):
    prefix = f"tsvc-test-{secrets.token_hex(6)}:"
    admin = asyncio.run(_admin_key(db_url))
    folder = tmp_path_factory.mktemp("cluster")
    env = base_env(
        db_url, folder, REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=prefix, LOG_LEVEL="info",
        DB_POOL_MAX_SIZE=8,
    )  # fmt: skip
    try:
        with running_services(2, env, folder) as services:
            yield Cluster(services, {"X-API-Key": admin}, [admin])
    finally:
        conn = redis.Redis.from_url(REDIS_URL)
        keys = list(conn.scan_iter(match=prefix + "*"))
        if keys:
            conn.delete(*keys)
        conn.close()


async def _json(resp: aiohttp.ClientResponse) -> Any:
    return await resp.json() if resp.content_type == "application/json" else None


async def _create_key(http: aiohttp.ClientSession, cluster: Cluster, **body: Any) -> dict:
    async with http.post(
        cluster.urls[0] + "/api/v1/api-keys", json={"name": "mp", **body}, headers=cluster.admin
    ) as resp:
        data = await _json(resp)
        assert resp.status == 201, data
    cluster.plaintexts.append(data["plaintext_key"])
    return data


async def _status(http, method: str, url: str, headers: dict[str, str], json=None) -> int:
    async with http.request(method, url, headers=headers, json=json) as resp:
        await resp.read()
        return resp.status


async def _within_a_second(check) -> float | None:
    """Seconds until check() holds, or None when it did not within one second."""
    started = time.monotonic()
    while time.monotonic() - started <= 1.0:
        if await check():
            return time.monotonic() - started
        await asyncio.sleep(0.02)
    return None


async def test_one_bucket_is_shared_by_both_processes(cluster) -> None:
    async with aiohttp.ClientSession() as http:
        created = await _create_key(http, cluster, rate_limit_max=50, rate_limit_window="1 hour")
        headers = {"X-API-Key": created["plaintext_key"]}
        gate = asyncio.Semaphore(16)

        async def one(i: int) -> tuple[int, int, str | None]:
            target = i % 2
            async with (
                gate,
                http.get(cluster.urls[target] + "/api/v1/tenants?limit=1", headers=headers) as resp,
            ):
                await resp.read()
                return target, resp.status, resp.headers.get("Retry-After")

        results = await asyncio.gather(*(one(i) for i in range(200)))
    admitted = [r for r in results if r[1] == 200]
    refused = [r for r in results if r[1] == 429]
    assert len(admitted) + len(refused) == 200
    # 50 tokens, refilled at 50 an hour: at most one more for the refill during the test.
    assert 50 <= len(admitted) <= 51
    assert {target for target, _, _ in admitted} == {0, 1}  # both processes served some
    assert all(int(retry_after or 0) >= 1 for _, _, retry_after in refused)


async def test_changes_through_one_process_reach_the_other_within_a_second(cluster) -> None:
    first, second = cluster.urls
    async with aiohttp.ClientSession() as http:
        created = await _create_key(http, cluster, scopes=["read"])
        key = {"X-API-Key": created["plaintext_key"]}
        async with http.post(
            first + "/api/v1/roles", json={"name": f"mp-{secrets.token_hex(4)}",
                                           "scopes": ["read", "write"]},
            headers=cluster.admin,
        ) as resp:  # fmt: skip
            role = await _json(resp)
            assert resp.status == 201, role
        body = {"name": "mp", "slug": f"mp_{secrets.token_hex(4)}"}
        # The second process knows (and caches) the key as it is now.
        for _ in range(2):
            assert await _status(http, "GET", second + "/api/v1/tenants", key) == 200
        assert await _status(http, "POST", second + "/api/v1/tenants", key, body) == 403

        async with http.put(
            f"{first}/api/v1/api-keys/{created['id']}/role", json={"role_id": role["id"]},
            headers=cluster.admin,
        ) as resp:  # fmt: skip
            assert resp.status == 200

        async def may_write() -> bool:
            payload = {"name": "mp", "slug": f"mp_{secrets.token_hex(4)}"}
            return await _status(http, "POST", second + "/api/v1/tenants", key, payload) == 201

        assert await _within_a_second(may_write) is not None

        async with http.delete(
            f"{first}/api/v1/api-keys/{created['id']}", headers=cluster.admin
        ) as resp:
            assert resp.status == 204

        async def refused() -> bool:
            return await _status(http, "GET", second + "/api/v1/tenants", key) == 401

        assert await _within_a_second(refused) is not None


def test_process_logs_never_carry_a_key(cluster) -> None:
    logs = "".join(service.log() for service in cluster.services)
    routes = {json.loads(line).get("route") for line in logs.splitlines() if line.strip()}
    assert "/api/v1/tenants" in routes  # the request lines are there
    assert len(cluster.plaintexts) >= 3
    for plaintext in cluster.plaintexts:
        assert plaintext not in logs
        assert plaintext[12:] not in logs  # not even the secret part alone
