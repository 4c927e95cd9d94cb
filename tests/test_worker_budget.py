"""Issue 16, item 13: without Redis every worker keeps its own buckets, so `serve
--workers N` splits each limit between them (each allows limit // N, at least 1) and
says so loudly at start; with Redis the buckets are shared and the limit stays whole."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from service.ratelimit.buckets import Limit
from service.ratelimit.limiter import RateLimiter, worker_share
from service.settings.options import Settings
from tests.conftest import HMAC_SECRET, base_env
from tests.support.live import admin_key
from tests.support.processes import REPO_ROOT, ServiceProcess


@pytest.mark.parametrize(
    ("limit", "workers", "each"),
    [(100, 1, 100), (100, 4, 25), (100, 3, 33), (4, 2, 2), (3, 4, 1), (1, 8, 1)],
)
def test_each_worker_gets_its_share(limit: int, workers: int, each: int) -> None:
    assert worker_share(Limit(limit, 60), workers) == Limit(each, 60)


async def test_a_worker_limits_locally_to_its_share(tmp_path: Path) -> None:
    settings = Settings.from_env({"DATA_DIR": str(tmp_path), "RATE_LIMIT_MAX": "8"})
    limiter = RateLimiter(settings, workers=4)
    results = [(await limiter.hit("key:x", limiter.default)).allowed for _ in range(4)]
    assert results == [True, True, False, False]
    decision = await limiter.hit("key:x", limiter.default)
    assert (decision.limit, decision.allowed) == (2, False)
    await limiter.close()


async def test_with_redis_the_limit_is_whole(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "DATA_DIR": str(tmp_path),
            "RATE_LIMIT_MAX": "8",
            "REDIS_URL": "redis://127.0.0.1:6379",
            "REDIS_KEY_PREFIX": f"tsvc-test-{os.getpid()}-{id(tmp_path)}:",
        }
    )
    limiter = RateLimiter(settings, workers=4)
    try:
        decision = await limiter.hit("key:x", limiter.default)
        assert (decision.limit, decision.remaining) == (8, 7)
        await limiter.redis.client.delete(f"{settings.redis_key_prefix}ratelimit:key:x")  # type: ignore[union-attr]
    finally:
        await limiter.close()


def _wait_for_started(service: ServiceProcess, workers: int) -> None:
    deadline = time.monotonic() + 60
    while service.output().count('"service started"') < workers:
        assert time.monotonic() < deadline, service.output()[-3000:]
        time.sleep(0.05)


def _status(url: str, key: str) -> int:
    request = urllib.request.Request(  # noqa: S310 - loopback
        url, headers={"X-API-Key": key, "Connection": "close"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 - loopback
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


async def test_two_workers_without_redis_allow_the_limit_once(
    fresh_db_url: str, tmp_path: Path
) -> None:
    key = await admin_key(fresh_db_url, HMAC_SECRET)
    env = base_env(
        fresh_db_url, tmp_path, RATE_LIMIT_MAX="4", RATE_LIMIT_WINDOW="1 hour", LOG_LEVEL="info"
    )
    service = ServiceProcess(
        {"PATH": os.environ.get("PATH", ""), **env}, tmp_path, "--workers", "2", cwd=REPO_ROOT
    )
    try:
        service.wait_ready()
        # Both workers listening (a worker still starting would die of the SIGTERM below).
        _wait_for_started(service, 2)
        # A new connection each time: the kernel spreads them over both workers.
        statuses = [_status(service.url + "/api/v1/tenants", key) for _ in range(24)]
    finally:
        code = service.stop()
    assert code == 0, service.output()[-4000:]
    assert statuses.count(200) <= 4, statuses
    assert statuses.count(429) >= 20, statuses
    lines = [json.loads(line) for line in service.output().splitlines() if line.startswith("{")]
    warnings = [line for line in lines if line["event"].startswith("rate limits split")]
    assert len(warnings) == 1, lines
    assert warnings[0]["level"] == "warning"
    assert (warnings[0]["workers"], warnings[0]["rate_limit_max_per_worker"]) == (2, 2)
