"""The change stream seen from the Python client, against one `tenant-service serve`.

    python -m bench.client_stream [--database-url URL] [--port 18450] [--clients 200]

- latency: `--clients` ContextCaches (one thread each, spread over `--processes` client
  processes) follow a small subtree; each of `--writes` config writes at its root is
  timed from the write's answer to each client's change callback (p50, p99, max);
- lock at scale: `--big-clients` caches follow a root with `--tenants` - 1 descendants;
  a locked config entry is set at that root, timed from the answer until every cache
  holds all the new contexts;
- idle streams: `--idle` raw stream connections held open; the service process's RSS
  before and after (psutil);
- reconnects: `--reconnect` raw connections at once with Last-Event-ID, each until its
  first event arrives; the time for all, and any 5xx.
Figures only; the targets are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import psutil

from bench.environment import PostgresServer, ServiceProcess, run_cli, service_env
from tenant_context import Client, ContextCache

DATABASE = "bench_client_stream"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _subscriber(base: str, key: str, root: str, caches: int, out: Any, writes: int) -> None:
    """A client process: `caches` ContextCaches on `root`; for each write n, once every
    cache called back, the callbacks' times (CLOCK_MONOTONIC is one clock machine-wide)."""
    arrived: dict[int, list[float]] = {}
    lock = threading.Lock()

    def callback(tenant_id: str, old: Any, new: Any) -> None:
        if new is None or "n" not in new["resolved_config"]:
            return
        now = time.monotonic()
        n = new["resolved_config"]["n"]["value"]
        with lock:
            arrived.setdefault(n, []).append(now)
            if len(arrived[n]) == caches:
                out.put((n, arrived.pop(n)))

    client = Client(base, api_key=key, timeout=60)
    started = [ContextCache(client, root, on_change=callback).start() for _ in range(caches)]
    out.put(("ready", []))
    deadline = time.monotonic() + 60 + writes
    while started and time.monotonic() < deadline:
        time.sleep(0.5)  # the parent ends this process when it has every figure


def latency(
    client: Client, key: str, clients: int, writes: int, processes: int
) -> dict[str, float]:
    """Clients in `processes` processes (a deployment's apps do not share one
    interpreter): from each write's answer to every client's callback."""
    root = client.create_tenant("Latency", f"latency_{int(time.time())}")["id"]
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    share = [clients // processes + (i < clients % processes) for i in range(processes)]
    workers = [
        context.Process(target=_subscriber, args=(client.base_url, key, root, n, out, writes),
                        daemon=True)
        for n in share
    ]  # fmt: skip
    for worker in workers:
        worker.start()
    delays: list[float] = []
    from_request: list[float] = []
    try:
        for _ in workers:
            assert out.get(timeout=120)[0] == "ready"
        for n in range(writes):
            sent = time.monotonic()
            client.put_config(root, "n", n)
            answered = time.monotonic()
            for _ in workers:
                got, times = out.get(timeout=30)
                assert got == n, (got, n)
                # A callback can beat the writer to its own answer: that is no delay.
                delays += [max(0.0, t - answered) * 1000 for t in times]
                from_request += [(t - sent) * 1000 for t in times]
    finally:
        for worker in workers:
            worker.terminate()
            worker.join(10)
    return {"p50_ms": statistics.median(delays), "p99_ms": percentile(delays, 0.99),
            "max_ms": max(delays), "events": len(delays), "processes": processes,
            # An upper bound: from before the write was sent (its own round trip included).
            "from_request_p50_ms": statistics.median(from_request),
            "from_request_p99_ms": percentile(from_request, 0.99)}  # fmt: skip


def lock_at_scale(client: Client, tenants: int, clients: int) -> dict[str, float]:
    root = client.create_tenant("Big", f"big_{int(time.time())}")["id"]
    for start in range(0, tenants - 1, 100):
        count = min(100, tenants - 1 - start)
        client.create_tenants([{"name": f"T{start + i}", "slug": f"t{start + i}_{root[:8]}",
                                "parent_id": root} for i in range(count)])  # fmt: skip
    caches = [ContextCache(client, root).start() for _ in range(clients)]
    try:
        assert all(len(cache) == tenants for cache in caches), [len(c) for c in caches]
        client.put_config(root, "plan", "locked", locked=True)
        answered = time.monotonic()
        meta = client.last_response
        assert meta is not None
        assert meta.revision is not None
        deadline = answered + 60
        for cache in caches:
            for tenant_id in cache.tenant_ids():
                if not cache.wait_for(tenant_id, meta.revision, deadline - time.monotonic()):
                    raise RuntimeError("a cache did not hold every new context in 60 s")
        elapsed = time.monotonic() - answered
        for cache in caches:
            assert all(cache.value(t, "plan") == "locked" for t in cache.tenant_ids())
    finally:
        for cache in caches:
            cache.close()
    return {"all_contexts_s": elapsed, "clients": clients, "tenants": tenants}


async def idle_and_reconnect(
    base: str, key: str, root: str, idle: int, reconnect: int, pid: int
) -> dict[str, float]:
    process = psutil.Process(pid)
    path = f"{base}/api/v1/tenants/{root}/context-changes"
    headers = {"X-API-Key": key, "Accept": "text/event-stream"}
    before = process.memory_info().rss
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        streams = []
        for _ in range(idle):
            answer = await session.get(path, headers=headers, timeout=aiohttp.ClientTimeout())
            if answer.status != 200:
                raise RuntimeError(f"idle stream refused: {answer.status}")
            streams.append(answer)
        await asyncio.sleep(2)  # let the service settle its buffers before reading its size
        during = process.memory_info().rss
        for answer in streams:
            answer.close()
        resumed, failures = await _reconnect(session, base, path, headers, reconnect)
    return {"idle_streams": idle, "rss_before_mb": before / 2**20, "rss_idle_mb": during / 2**20,
            "per_stream_kb": (during - before) / max(idle, 1) / 1024,
            "reconnects": reconnect, "all_resumed_s": resumed, "failures": failures}  # fmt: skip


async def _reconnect(
    session: aiohttp.ClientSession, base: str, path: str, headers: dict[str, str], count: int
) -> tuple[float, int]:
    async with session.put(f"{path.rsplit('/', 1)[0]}/config/resume", headers=headers,
                           json={"value": 0}) as answer:  # fmt: skip
        revision = int(answer.headers["X-Revision"])
    async with session.put(f"{path.rsplit('/', 1)[0]}/config/resume", headers=headers,
                           json={"value": 1}) as answer:  # fmt: skip
        answer.raise_for_status()
    failures = 0

    async def one() -> None:
        nonlocal failures
        resume = {**headers, "Last-Event-ID": f"{revision}:0"}
        async with session.get(path, headers=resume) as answer:
            if answer.status >= 500 or answer.status != 200:
                failures += 1
                return
            async for line in answer.content:
                if line.startswith(b"event: context"):
                    return

    started = time.monotonic()
    await asyncio.wait_for(asyncio.gather(*(one() for _ in range(count))), 120)
    return time.monotonic() - started, failures


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with PostgresServer(args.database_url, args.data_dir) as server:
        dsn = await server.fresh_database(DATABASE)
        limits = {"CONTEXT_STREAMS_PER_CALLER": "5000", "CONTEXT_STREAMS_PER_PROCESS": "5000"}
        env = {**service_env(dsn, args.data_dir / DATABASE, 10), **limits}
        await run_cli(env, "migrate")
        created = await run_cli(env, "api-keys", "create", "--name", "bench",
                                "--scopes", "read,write,admin", "--json")  # fmt: skip
        key = json.loads(created)["plaintext_key"]
        service = ServiceProcess(env, args.port)
        await service.start()
        try:
            client = Client(service.base_url, api_key=key, timeout=60)
            figures: dict[str, Any] = {}
            figures["latency"] = await asyncio.to_thread(
                latency, client, key, args.clients, args.writes, args.processes
            )
            print("latency", figures["latency"], flush=True)
            figures["lock"] = await asyncio.to_thread(
                lock_at_scale, client, args.tenants, args.big_clients
            )
            print("lock", figures["lock"], flush=True)
            root = client.create_tenant("Idle", f"idle_{int(time.time())}")["id"]
            assert service.pid is not None
            figures["streams"] = await idle_and_reconnect(
                service.base_url, key, root, args.idle, args.reconnect, service.pid
            )
            print("streams", figures["streams"], flush=True)
            return figures
        finally:
            await service.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.client_stream", description=__doc__)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--data-dir", type=Path, default=Path(".data/bench"))
    parser.add_argument("--port", type=int, default=18450)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--processes", type=int, default=4, help="client processes")
    parser.add_argument("--tenants", type=int, default=10_001)
    parser.add_argument("--big-clients", type=int, default=3)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--reconnect", type=int, default=500)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
