"""Read replicas measured (docs/performance.md, "Replicas"): routing overhead against the
primary, and behaviour while the replica lags.

    .venv/bin/python -m bench replicas [--tenants N] [--rounds R] [--seconds S]

Builds a real primary and streaming standby (tests/support/cluster.py: the machine's
PostgreSQL binaries, run as the `postgres` OS user), seeds a database, and starts four
`tenant-service serve` processes: primary only and with DATABASE_REPLICA_URLS pointing
at the standby, each with the read cache on and off (READ_CACHE_SIZE=0). The same read
load runs against each pair in turn, interleaved over several rounds, and every figure
is the replica process's over the primary-only one's of the same round (median of the
rounds). Then replay is paused on the standby and the replica process is watched while
it falls behind: reads go on answering, a consistency token newer than the replica goes
to the primary, the lag metric grows, and past DATABASE_REPLICA_MAX_LAG_SECONDS the
replica is skipped; after resuming, the time until it is used again. Writes
.data/bench-results/replicas/replicas-<time>.json (ignored by git).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from uuid import UUID

import aiohttp
import asyncpg

from bench.environment import ServiceProcess, free_port, run_cli, service_env
from bench.loadgen import LoadResult, Target, run_load
from bench.seed import seed_database
from bench.shapes import SeedPlan
from service.db.queries import Queries
from tests.support.cluster import Cluster, find_binaries
from tests.support.databases import create_database, create_template, with_database

# A folder of its own: bench/results/*.json are the suite's RunResult files.
RESULTS_DIR = Path(".data/bench-results/replicas")  # ignored by git
# tenant_service_db_replica_skips_total{reason="lagging",replica="h:p/db"} 3.0
SERIES = re.compile(
    r"^tenant_service_db_replica_(?P<name>\w+)\{(?:reason=\"(?P<reason>\w+)\",)?"
    r"replica=\"[^\"]*\"\} (?P<value>\S+)$",
    re.MULTILINE,
)
METRICS_TOKEN = "bench-replicas-metrics-" + "Zq7Lw2Xv9Kp4Rt6Ym3Nb8Hc"
MAX_LAG_SECONDS = 2.0
CHECK_SECONDS = 0.2
CONNECTIONS = 8
# (scenario, cache on, path suffix after /api/v1/tenants/<id>)
SCENARIOS = (
    ("get_tenant_cached", True, ""),
    ("context_cached", True, "/context"),
    ("get_tenant_uncached", False, ""),
    ("context_uncached", False, "/context"),
    ("children_list", True, "/children?limit=20"),
)


def say(text: str) -> None:
    print(text, flush=True)


async def prepare(cluster: Cluster, tenants: int) -> tuple[str, str, list[str], list[str]]:
    """A seeded database on the primary, its DSN on the standby, tenant ids to read and
    parents to list."""
    primary = await asyncio.to_thread(
        lambda: create_database(cluster.primary.dsn, create_template(cluster.primary.dsn))
    )
    await seed_database(primary, SeedPlan.for_total(tenants))
    conn = await asyncpg.connect(primary)
    try:
        await conn.execute("ANALYZE")
        ids = [
            str(r["id"])
            for r in await conn.fetch(
                "SELECT id FROM tenants WHERE status = 'active' ORDER BY md5(id::text) LIMIT 400"
            )
        ]
        parents = [
            str(r["parent_id"])
            for r in await conn.fetch(
                "SELECT parent_id FROM tenants WHERE parent_id IS NOT NULL "
                "GROUP BY parent_id HAVING count(*) >= 5 ORDER BY md5(parent_id::text) LIMIT 100"
            )
        ]
    finally:
        await conn.close()
    await cluster.wait_replayed(within=120)
    return primary, with_database(cluster.standby.dsn, primary.rsplit("/", 1)[1]), ids, parents


def targets(ids: list[str], parents: list[str], suffix: str) -> list[Target]:
    chosen = parents if suffix.startswith("/children") else ids
    return [Target("GET", f"/api/v1/tenants/{i}{suffix}") for i in chosen]


async def scrape(base_url: str) -> dict[str, float]:
    """The replica series of /metrics, by name and labels (one replica)."""
    headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{base_url}/metrics", headers=headers) as answer,
    ):
        text = await answer.text()
    found: dict[str, float] = {}
    for match in SERIES.finditer(text):
        name, reason, value = match.group("name", "reason", "value")
        found[name if reason is None else f"{name}:{reason}"] = float(value)
    return found


async def overhead(
    services: Mapping[tuple[bool, bool], ServiceProcess],
    headers: dict[str, str],
    ids: list[str],
    parents: list[str],
    rounds: int,
    seconds: float,
) -> dict[str, Any]:
    """Each scenario on the primary-only and the replica process in turn, per round."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in SCENARIOS}
    for _name, cached, suffix in SCENARIOS:  # warm-up: fill the caches and the pools
        for replica in (False, True):
            url = services[(replica, cached)].base_url
            await run_load(url, targets(ids, parents, suffix), headers=headers,
                           connections=CONNECTIONS, duration_s=1.0)  # fmt: skip
    for round_number in range(rounds):
        for name, cached, suffix in SCENARIOS:
            pair: dict[bool, LoadResult] = {}
            order = (False, True) if round_number % 2 == 0 else (True, False)
            for replica in order:
                pair[replica] = await run_load(
                    services[(replica, cached)].base_url,
                    targets(ids, parents, suffix),
                    headers=headers,
                    connections=CONNECTIONS,
                    duration_s=seconds,
                )
            base, other = pair[False], pair[True]
            runs[name].append({
                "primary_rps": base.rps, "replica_rps": other.rps,
                "primary_p50_ms": base.p50_ms, "replica_p50_ms": other.p50_ms,
                "primary_p99_ms": base.p99_ms, "replica_p99_ms": other.p99_ms,
                "errors": base.errors + other.errors,
            })  # fmt: skip
            say(f"round {round_number + 1} {name}: {base.rps:.0f} vs {other.rps:.0f} req/s")
    summary: dict[str, Any] = {}
    for name, rows in runs.items():
        summary[name] = {
            "rps_ratio": _median_ratio(rows, "replica_rps", "primary_rps"),
            "p50_ratio": _median_ratio(rows, "replica_p50_ms", "primary_p50_ms"),
            "primary_rps": round(statistics.median(r["primary_rps"] for r in rows)),
            "replica_rps": round(statistics.median(r["replica_rps"] for r in rows)),
            "errors": sum(int(r["errors"]) for r in rows),
            "rounds": rows,
        }  # fmt: skip
    return summary


def _median_ratio(rows: list[dict[str, float]], top: str, bottom: str) -> float:
    return round(statistics.median(r[top] / r[bottom] for r in rows), 3)


async def lagging(
    cluster: Cluster, service: ServiceProcess, headers: dict[str, str], ids: list[str]
) -> dict[str, Any]:
    """Pause replay, write, and watch reads and the metrics until the replica is skipped;
    resume and time its return."""
    base = service.base_url
    tenant = ids[0]
    timeline: list[dict[str, Any]] = []
    statuses: dict[str, int] = {}
    async with aiohttp.ClientSession(headers=headers) as session:
        start_metrics = await scrape(base)
        await cluster.pause_replay()
        paused = time.monotonic()
        async with session.patch(
            f"{base}/api/v1/tenants/{tenant}", json={"name": "Lagging"}
        ) as answer:
            assert answer.status == 200, await answer.text()
            token = answer.headers["X-Consistency-Token"]
        while time.monotonic() - paused < MAX_LAG_SECONDS + 2.0:
            before = await scrape(base)
            row: dict[str, Any] = {"t_s": round(time.monotonic() - paused, 2)}
            async with session.get(f"{base}/api/v1/tenants/{tenant}/children?limit=5") as a:
                row["list_status"] = a.status
            async with session.get(
                f"{base}/api/v1/tenants/{tenant}/children?limit=5",
                headers={"X-Consistency-Token": token},
            ) as a:
                row["token_list_status"] = a.status
            async with session.get(f"{base}/api/v1/tenants/{tenant}") as a:
                row["get_status"] = a.status
                row["get_sees_write"] = (await a.json())["name"] == "Lagging"
            after = await scrape(base)
            row["lag_seconds"] = after.get("lag_seconds", 0.0)
            row["replica_reads"] = after.get("reads_total", 0) - before.get("reads_total", 0)
            for reason in ("behind_token", "lagging"):
                key = f"skips_total:{reason}"
                row[f"skips_{reason}"] = after.get(key, 0) - before.get(key, 0)
            for field in ("list_status", "token_list_status", "get_status"):
                statuses[str(row[field])] = statuses.get(str(row[field]), 0) + 1
            timeline.append(row)
            await asyncio.sleep(0.25)
        await cluster.resume_replay()
        resumed = time.monotonic()
        while (await scrape(base)).get("lag_seconds", 1.0) > 0:
            if time.monotonic() - resumed > 30:
                raise RuntimeError("the replica did not catch up within 30 s")
            await asyncio.sleep(0.05)
        back_s = time.monotonic() - resumed
        end_metrics = await scrape(base)
    skipped = [r["t_s"] for r in timeline if r["skips_lagging"] > 0]
    return {
        "max_lag_seconds": MAX_LAG_SECONDS,
        "check_seconds": CHECK_SECONDS,
        "statuses": statuses,
        "every_read_answered_200": set(statuses) == {"200"},
        "token_reads_sent_to_primary": sum(r["skips_behind_token"] for r in timeline),
        "get_saw_write_every_time": all(r["get_sees_write"] for r in timeline),
        "first_skipped_as_lagging_at_s": skipped[0] if skipped else None,
        "lag_seconds_last": timeline[-1]["lag_seconds"] if timeline else None,
        "used_again_after_resume_s": round(back_s, 3),
        "replica_reads_total": end_metrics.get("reads_total", 0)
        - start_metrics.get("reads_total", 0),
        "timeline": timeline,
    }


async def fill_statements(standby: str, ids: list[str], repeats: int = 2000) -> dict[str, Any]:
    """What a replica fill adds on the database side: the replay-position statement
    against the tenant document's own, timed on one standby connection, interleaved."""
    queries = Queries.load()
    replayed, document = queries["replay_position"], queries["get_tenant"]
    conn = await asyncpg.connect(standby)
    try:
        times: dict[str, list[float]] = {"replay_position": [], "get_tenant": []}
        for index in range(repeats):
            started = time.perf_counter()
            await replayed.value(conn)
            middle = time.perf_counter()
            await document.one(conn, tenant_id=UUID(ids[index % len(ids)]))
            times["replay_position"].append(middle - started)
            times["get_tenant"].append(time.perf_counter() - middle)
    finally:
        await conn.close()
    medians = {name: statistics.median(values) * 1e6 for name, values in times.items()}
    return {
        "repeats": repeats,
        "replay_position_us": round(medians["replay_position"], 1),
        "get_tenant_us": round(medians["get_tenant"], 1),
        "ratio": round(medians["replay_position"] / medians["get_tenant"], 3),
    }


async def measure(tenants: int, rounds: int, seconds: float) -> dict[str, Any]:
    binaries, why = find_binaries()
    if binaries is None:
        raise SystemExit(f"cannot build a primary and standby: {why}")
    cluster = Cluster(binaries).build()
    services: dict[tuple[bool, bool], ServiceProcess] = {}
    try:
        await cluster.wait_streaming()
        primary, standby, ids, parents = await prepare(cluster, tenants)
        say(f"seeded {tenants:,} tenants; the standby has replayed them")
        work = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
        env = service_env(primary, work, 8) | {"METRICS_TOKEN": METRICS_TOKEN}
        created = json.loads(await run_cli(
            env, "api-keys", "create", "--name", "bench", "--scopes", "read,write,admin", "--json"
        ))  # fmt: skip
        headers = {"X-API-Key": created["plaintext_key"]}
        for replica in (False, True):
            for cached in (False, True):
                extra = {"READ_CACHE_SIZE": "20000" if cached else "0"}
                if replica:
                    extra |= {
                        "DATABASE_REPLICA_URLS": standby,
                        "DATABASE_REPLICA_MAX_LAG_SECONDS": str(MAX_LAG_SECONDS),
                        "DATABASE_REPLICA_CHECK_SECONDS": str(CHECK_SECONDS),
                    }
                service = ServiceProcess(env | extra, free_port())
                await service.start()
                services[(replica, cached)] = service
        result = {
            "tenants": tenants,
            "rounds": rounds,
            "seconds_per_load": seconds,
            "connections": CONNECTIONS,
            "fill_statements": await fill_statements(standby, ids),
            "overhead": await overhead(services, headers, ids, parents, rounds, seconds),
            "lag": await lagging(cluster, services[(True, True)], headers, ids),
        }
        return result
    finally:
        for service in services.values():
            await service.stop()
        await asyncio.to_thread(cluster.close)


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tenants", type=int, default=20_000, help="seeded (20,000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--seconds", type=float, default=3.0, help="per load run (3)")
    parser.add_argument("--output-json", type=Path, default=None)


def run(args: argparse.Namespace) -> int:
    result = asyncio.run(measure(args.tenants, args.rounds, args.seconds))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.output_json or RESULTS_DIR / f"replicas-{stamp}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for name, figures in result["overhead"].items():
        say(f"{name}: replica/primary req/s {figures['rps_ratio']}, p50 {figures['p50_ratio']}")
    say(f"fill statements on the standby: {json.dumps(result['fill_statements'])}")
    lag = {k: v for k, v in result["lag"].items() if k != "timeline"}
    say(f"lag: {json.dumps(lag)}")
    say(f"written to {out}")
    return 0
