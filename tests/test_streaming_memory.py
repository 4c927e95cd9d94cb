"""A whole descendants list is streamed in bounded memory: a real service process answers
eight concurrent lists of a subtree of tens of thousands of tenants (megabytes each)
while its peak resident memory stays within a few chunks of where it was."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import aiohttp
import asyncpg
import orjson
import pytest

from service.auth.principal import SYSTEM_ACTOR
from service.db.pool import connect
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import issue_api_key
from tests.conftest import HMAC_SECRET, base_env
from tests.support.processes import running_services
from tests.support.seeding import seed_balanced

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
CONCURRENT = 8
# Peak growth allowed: the answers in flight are CONCURRENT x 12 MB; streamed, each
# holds one chunk of 500 documents (well under a megabyte) and a socket buffer.
MAX_GROWTH_MB = 40


async def _seed(dsn: str) -> tuple[str, str]:
    """A subtree of 27,930 tenants (fan-out 30, three levels) and an admin key."""
    conn = await asyncpg.connect(dsn)
    try:
        levels = await seed_balanced(conn, roots=1, fanout=30, levels=3, prefix="mem")
    finally:
        await conn.close()
    repos = Repositories.build(Queries.load())
    pooled = await connect(dsn)
    try:
        async with pooled.transaction():
            issued = await issue_api_key(
                pooled, keys=repos.api_keys, recorder=ChangeRecorder(repos.outbox),
                hmac_secret=HMAC_SECRET.encode(), actor=SYSTEM_ACTOR, name="memory",
                scopes=["read", "write", "admin"],
            )  # fmt: skip
    finally:
        await pooled.close()
    return str(levels[0][0]), issued.plaintext


def _status(pid: int, field: str) -> int:
    """A /proc/<pid>/status figure in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def _reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def _read_all(session: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> bytes:
    async with session.get(url, headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.read()


def test_streaming_keeps_memory_flat(fresh_db_url: str, tmp_path: Path) -> None:
    root, key = asyncio.run(_seed(fresh_db_url))
    env = base_env(
        fresh_db_url, tmp_path, HEAVY_READS_PER_PROCESS=CONCURRENT,
        HEAVY_READS_PER_CALLER=CONCURRENT, DB_POOL_MAX_SIZE=CONCURRENT + 2,
    )  # fmt: skip
    headers = {"X-API-Key": key}
    with running_services(1, env, tmp_path) as (service,):
        url = f"{service.url}/api/v1/tenants/{root}/descendants"
        pid = service.proc.pid

        async def run() -> list[bytes]:
            async with aiohttp.ClientSession() as session:
                await _read_all(session, url, headers)  # warm: pools, statements, buffers
                _reset_peak(pid)  # so VmHWM below is the peak of the concurrent reads
                return await asyncio.gather(
                    *(_read_all(session, url, headers) for _ in range(CONCURRENT))
                )

        before = _status(pid, "VmRSS")
        bodies = asyncio.run(run())
        peak = _status(pid, "VmHWM")
    documents = orjson.loads(bodies[0])
    assert len(documents) == 30 + 900 + 27_000
    assert len(set(bodies)) == 1
    answer_mb = len(bodies[0]) / 1e6
    assert answer_mb > 10
    growth_mb = (peak - before) / 1024
    print(f"peak RSS growth {growth_mb:.1f} MB for {CONCURRENT} x {answer_mb:.1f} MB")
    assert growth_mb < MAX_GROWTH_MB, (
        f"peak RSS grew {growth_mb:.1f} MB serving {CONCURRENT} x {answer_mb:.1f} MB"
    )
