"""The documented high-availability topology under faults (tests/support/ha.py): etcd,
three Patroni nodes with synchronous replication, HAProxy to the primary and PgBouncer
in transaction mode in front of it, two service processes behind HAProxy. Writers (with
Idempotency-Key) and tokenless readers go through the balancer across a planned
switchover, a postmaster killed and a primary node lost. Asserted: never a 500, every
error a 503 with Retry-After, no acknowledged write lost, no webhook delivery lost,
tokenless reads answered throughout, and the writes' error window under 5 s for the
switchover and under ttl + 5 s for the node loss. The figures go to the test's output
(docs/scaling.md quotes them). Marked `cluster`: CI runs it in its first pass only."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from service.db.pool import connect
from tests.conftest import ENCRYPTION_KEY, HMAC_SECRET, JWT_SECRET
from tests.support.ha import (
    TTL,
    Etcd,
    HaProxy,
    Node,
    Ports,
    leader_of,
    make_folder,
    patronictl,
    skip_reason,
    wait_port,
)
from tests.support.pgbouncer import PgBouncer
from tests.support.processes import service_env
from tests.support.webhooks import Receiver, eventually
from tests.test_webhook_processes import admin_key

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or ""),
]
DATABASE = "tenant_service"
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
SWITCHOVER_BOUND_SECONDS = 5.0
NODE_LOSS_BOUND_SECONDS = TTL + 5.0
# Patroni restarts the postmaster in place: 4.2 to 5.4 s of errors measured. Nearly
# twice that leaves room on a loaded machine, and still fails the 15 s seen when
# requests waited for the whole outage.
POSTMASTER_KILL_BOUND_SECONDS = 10.0


@dataclass
class Traffic:
    """What the writers and readers saw, with the time of each answer."""

    acknowledged: list[str] = field(default_factory=list)
    write_log: list[tuple[float, int]] = field(default_factory=list)
    read_log: list[tuple[float, int]] = field(default_factory=list)
    # (start, seconds) of every write: how long one waited in a fault.
    write_times: list[tuple[float, float]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def check(self, resp: aiohttp.ClientResponse, text: str) -> None:
        if resp.status >= 500 and resp.status != 503:
            self.problems.append(f"{resp.status}: {text[:300]}")
        if resp.status == 503 and resp.headers.get("Retry-After") is None:
            self.problems.append(f"503 without Retry-After: {text[:300]}")

    def slowest_write(self, since: float, until: float) -> float:
        """The longest write that started in the phase."""
        return max((took for at, took in self.write_times if since <= at < until), default=0.0)

    def error_window(self, log: list[tuple[float, int]], since: float, until: float) -> float:
        """From the first failure answered in the phase to the first success after the
        last one (0 when nothing failed)."""
        failures = [at for at, status in log if since <= at < until and status >= 400]
        if not failures:
            return 0.0
        after = [at for at, status in log if at > failures[-1] and status < 400]
        end = min(after[0], until) if after else until
        return end - failures[0]


async def writer(session: aiohttp.ClientSession, base: str, traffic: Traffic, n: int) -> None:
    while not traffic.stop.is_set():
        body = {"name": "HA", "slug": f"ha_{n}_{uuid.uuid4().hex[:10]}"}
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        started = time.monotonic()
        try:
            async with session.post(f"{base}/api/v1/tenants", json=body, headers=headers) as resp:
                text = await resp.text()
                traffic.write_log.append((time.monotonic(), resp.status))
                traffic.write_times.append((started, time.monotonic() - started))
                traffic.check(resp, text)
                if resp.status == 201:
                    traffic.acknowledged.append((await resp.json())["id"])
                elif resp.status != 503:
                    traffic.problems.append(f"write {resp.status}: {text[:300]}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            traffic.problems.append(f"write failed: {exc!r}")
        await asyncio.sleep(0.05)


async def reader(
    session: aiohttp.ClientSession, base: str, traffic: Traffic, tenant_id: str
) -> None:
    while not traffic.stop.is_set():
        try:
            async with session.get(f"{base}/api/v1/tenants/{tenant_id}") as resp:
                text = await resp.text()
                traffic.read_log.append((time.monotonic(), resp.status))
                traffic.check(resp, text)
                if resp.status != 200:
                    traffic.problems.append(f"read {resp.status}: {text[:300]}")
        except (aiohttp.ClientError, TimeoutError) as exc:
            traffic.problems.append(f"read failed: {exc!r}")
        await asyncio.sleep(0.1)


class Topology:
    def __init__(self) -> None:
        self.folder = make_folder()
        self.ports = Ports()
        self.etcd: Etcd | None = None
        self.nodes: list[Node] = []
        self.haproxy: HaProxy | None = None
        self.bouncer: PgBouncer | None = None
        self.services: list[subprocess.Popen[bytes]] = []
        self.keep: Path | None = None

    def close(self) -> None:
        for proc in self.services:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.services:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.bouncer is not None:
            self.bouncer.close()
        if self.haproxy is not None:
            self.haproxy.stop()
        for node in self.nodes:
            node.stop()
        if self.etcd is not None:
            self.etcd.stop()
        if self.keep is not None:  # the logs outlive the servers' files, for a failure
            for log in self.folder.glob("**/*.log"):
                target = self.keep / "ha-logs" / log.relative_to(self.folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(log, target)
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
async def topology(tmp_path: Path) -> AsyncIterator[Topology]:
    built = Topology()
    # The servers' logs, kept after the test: HA_TEST_LOG_DIR, or the test's own folder.
    built.keep = Path(os.environ.get("HA_TEST_LOG_DIR") or tmp_path)
    try:
        yield built
    finally:
        await asyncio.to_thread(built.close)


async def wait_cluster(nodes: list[Node], within: float = 120) -> Node:
    """Until there is a leader, every other node streams from it, and one of them is its
    synchronous standby for real (in pg_stat_replication, not only in the DCS), twice in
    a row a second apart: after a restart Patroni may drop the synchronous standby for
    a moment, and a leader lost then has no standby that may take over."""

    def steady() -> Node | None:
        leader = leader_of(nodes)
        if leader is None:
            return None
        status, state = leader.api("/patroni")
        replication = state.get("replication", []) if status == 200 else []
        assert isinstance(replication, list)
        streaming = [r for r in replication if r.get("state") == "streaming"]
        sync = [r for r in streaming if r.get("sync_state") == "sync"]
        in_dcs = [n for n in nodes if n is not leader and n.api("/sync")[0] == 200]
        if len(streaming) == len(nodes) - 1 and sync and in_dcs:
            return leader
        return None

    async def ready() -> Node | None:
        first = await asyncio.to_thread(steady)
        if first is None:
            return None
        await asyncio.sleep(1)
        again = await asyncio.to_thread(steady)
        return again if again is first else None

    leader: Node = await eventually(ready, within=within, interval=0.5)
    return leader


async def test_switchover_postmaster_kill_and_node_loss_through_the_balancer(
    topology: Topology, tmp_path: Path
) -> None:
    began = time.monotonic()
    ports = topology.ports
    topology.etcd = await asyncio.to_thread(Etcd, topology.folder, ports)
    topology.nodes = [Node(f"n{i}", topology.folder, ports, topology.etcd.port) for i in (1, 2, 3)]
    for node in topology.nodes:
        node.start()
    leader = await wait_cluster(topology.nodes)
    conn = await asyncpg.connect(leader.dsn)
    try:
        await conn.execute(f"CREATE DATABASE {DATABASE}")
    finally:
        await conn.close()

    service_ports = [ports.take(), ports.take()]
    topology.haproxy = HaProxy(topology.folder, ports, topology.nodes)
    await asyncio.to_thread(topology.haproxy.start, service_ports)
    topology.bouncer = await asyncio.to_thread(
        PgBouncer, topology.haproxy.pg_port, pool_size=10, port=ports.take(),
        settings={"query_wait_timeout": "3", "server_login_retry": "1",
                  "server_connect_timeout": "2"},
    )  # fmt: skip
    hosts = ",".join(f"127.0.0.1:{n.pg_port}" for n in topology.nodes)
    direct = f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=read-write"
    replicas = ",".join(
        f"postgresql://postgres@127.0.0.1:{n.pg_port}/{DATABASE}" for n in topology.nodes
    )
    receiver = Receiver()
    receiver.port = ports.take()
    await receiver.start()
    env = service_env(
        DATABASE_URL=topology.bouncer.dsn_for(DATABASE), DATABASE_PGBOUNCER="true",
        DATABASE_LISTEN_URL=direct, DATABASE_REPLICA_URLS=replicas,
        DATABASE_REPLICA_CHECK_SECONDS="0.5", DATA_DIR=str(tmp_path),
        JWT_SECRET=JWT_SECRET, SERVICE_API_KEY_HMAC_SECRET=HMAC_SECRET,
        SERVICE_ENCRYPTION_KEY=ENCRYPTION_KEY,
        DB_POOL_MIN_SIZE="1", DB_POOL_MAX_SIZE="8", DB_ACQUIRE_TIMEOUT_SECONDS="3",
        DB_DEAD_CONNECTION_SECONDS="4", RATE_LIMIT_MAX="100000", LOG_LEVEL="warning",
        WEBHOOK_ALLOW_HTTP="true", WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
        WEBHOOK_TIMEOUT_SECONDS="2", WEBHOOK_RETRY_BASE_SECONDS="0.2",
    )  # fmt: skip
    for port in service_ports:
        topology.services.append(await asyncio.to_thread(start_service, topology, port, env))
    base = f"http://127.0.0.1:{topology.haproxy.http_port}"
    headers = await admin_key(direct)

    async with aiohttp.ClientSession(timeout=REQUEST_TIMEOUT, headers=headers) as session:

        async def balanced() -> bool:
            async with session.get(f"{base}/ready") as resp:
                return resp.status == 200

        await eventually(balanced, within=60, interval=0.2)
        async with session.post(
            f"{base}/api/v1/webhooks", json={"url": receiver.url, "events": ["tenant.created"]}
        ) as resp:
            assert resp.status == 201, await resp.text()
        async with session.post(
            f"{base}/api/v1/tenants", json={"name": "Read", "slug": "ha_read"}
        ) as resp:
            assert resp.status == 201, await resp.text()
            read_id = (await resp.json())["id"]

        traffic = Traffic()
        tasks = [asyncio.create_task(writer(session, base, traffic, n)) for n in range(3)]
        tasks += [asyncio.create_task(reader(session, base, traffic, read_id)) for _ in range(2)]
        phases: dict[str, float] = {}
        try:
            await asyncio.sleep(2)  # traffic flowing before the first fault

            # 1. A planned switchover.
            old = leader
            candidate = next(n for n in topology.nodes if n is not old)
            since = time.monotonic()
            await asyncio.to_thread(
                patronictl, old, "switchover", "--leader", old.name, "--candidate",
                candidate.name, "--force",
            )  # fmt: skip
            leader = await wait_cluster(topology.nodes, within=60)
            await writes_again(traffic)
            phases["switchover"] = since

            # 2. The postmaster killed: Patroni restarts it (or fails over).
            since = time.monotonic()
            await asyncio.to_thread(leader.kill_postmaster)
            leader = await wait_cluster(topology.nodes, within=90)
            await writes_again(traffic)
            phases["postmaster_kill"] = since

            # 3. The primary's node lost: its leader key expires after ttl.
            since = time.monotonic()
            lost = leader
            await asyncio.to_thread(lost.lose)
            alive = [n for n in topology.nodes if n is not lost]

            async def promoted() -> Node | None:
                return await asyncio.to_thread(leader_of, alive)

            await eventually(promoted, within=NODE_LOSS_BOUND_SECONDS + 60, interval=0.5)
            await writes_again(traffic)
            phases["node_loss"] = since
        finally:
            traffic.stop.set()
            await asyncio.gather(*tasks)
        figures: dict[str, float] = {}
        ends = [*list(phases.values())[1:], time.monotonic()]
        for (name, since), until in zip(phases.items(), ends, strict=True):
            figures[f"{name}_errors"] = traffic.error_window(traffic.write_log, since, until)
            figures[f"{name}_read_errors"] = traffic.error_window(traffic.read_log, since, until)
            figures[f"{name}_slowest_write"] = traffic.slowest_write(since, until)

        writes = len(traffic.write_log)
        rounded = {name: round(value, 2) for name, value in figures.items()}
        print(
            f"\nHA figures: {rounded}; writes {writes}, acknowledged "
            f"{len(traffic.acknowledged)}, 503s {sum(s == 503 for _, s in traffic.write_log)}; "
            f"reads {len(traffic.read_log)}; took {time.monotonic() - began:.1f} s"
        )
        assert traffic.problems == [], traffic.problems[:10]
        assert figures["switchover_errors"] < SWITCHOVER_BOUND_SECONDS, figures
        assert figures["postmaster_kill_errors"] < POSTMASTER_KILL_BOUND_SECONDS, figures
        assert figures["node_loss_errors"] < NODE_LOSS_BOUND_SECONDS, figures
        assert figures["node_loss_read_errors"] == 0.0, figures

        # No acknowledged write lost (synchronous replication), on the new primary.
        primary = leader_of(alive)
        assert primary is not None
        conn = await connect(f"postgresql://postgres@127.0.0.1:{primary.pg_port}/{DATABASE}")
        try:
            stored = await conn.fetchval(
                "SELECT count(*) FROM tenants WHERE id = ANY($1::uuid[])", traffic.acknowledged
            )
        finally:
            await conn.close()
        assert stored == len(traffic.acknowledged)

        # No webhook delivery lost: every acknowledged creation is delivered.
        wanted = set(traffic.acknowledged)

        async def delivered() -> bool:
            got = {r.json["data"]["id"] for r in receiver.requests if r.status == 200}
            return wanted <= got

        await eventually(delivered, within=60, interval=0.5)
    await receiver.close()


def start_service(topology: Topology, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    path = Path(env["DATA_DIR"]) / f"service-{port}.log"
    with path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--port", str(port), "--host", "127.0.0.1"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_port(port, 60, "the service")
    except RuntimeError:
        proc.kill()
        raise AssertionError(path.read_text(errors="replace")[-3000:]) from None
    return proc


async def writes_again(traffic: Traffic) -> None:
    """Until ten more writes have been acknowledged: the phase is over."""
    count = len(traffic.acknowledged)

    async def acknowledged() -> bool:
        return len(traffic.acknowledged) >= count + 10

    await eventually(acknowledged, within=90, interval=0.1)
