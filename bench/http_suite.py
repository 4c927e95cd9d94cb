"""The HTTP measurements against a running service: reads under load, end-to-end
latencies, writes and moves (with the latency of other requests while a big move runs)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import msgspec
import orjson

from bench.loadgen import (
    MOVE_TIMEOUT_S,
    LoadResult,
    SeriesResult,
    Target,
    run_load,
    time_requests,
)
from bench.results import (
    EndpointFigures,
    Interference,
    InterferenceMoves,
    MoveFigures,
    Moves,
    SeriesFigures,
    Writes,
)
from bench.seed import SeedReport

API = "/api/v1/tenants"


@dataclass(frozen=True)
class LoadSettings:
    connections: int
    duration_s: float
    warmup_s: float
    latency_samples: int
    tool: str
    write_samples: int
    batch_samples: int


READS = {
    # name: (landmark, path after /tenants/<id>)
    "children_page": ("wide_root", "/children?limit=100"),
    "ancestors_depth10": ("context_d10", "/ancestors"),
    "ancestors_depth31": ("deep31_leaf", "/ancestors"),
    "descendants_100": ("sized_100", "/descendants"),
    "descendants_10000": ("sized_10k", "/descendants"),
    "context_depth1": ("context_d1", "/context"),
    "context_depth5": ("context_d5", "/context"),
    "context_depth10": ("context_d10", "/context"),
}


# Tenants per batch read: POST /api/v1/contexts/batch is judged against single context
# reads of the same sampled tenants, tenant for tenant.
BATCH_TENANTS = 100


def read_targets(seed: SeedReport) -> dict[str, list[Target]]:
    """Each read endpoint the seeded data allows, with the requests a load cycles through."""
    samples = seed.samples
    targets = {"get_tenant": [Target("GET", f"{API}/{tid}") for tid in samples]}
    for name, (mark, suffix) in READS.items():
        if mark in seed.landmarks:
            targets[name] = [Target("GET", f"{API}/{seed.landmarks[mark]}{suffix}")]
    targets["context_samples"] = [Target("GET", f"{API}/{tid}/context") for tid in samples]
    whole = len(samples) - len(samples) % BATCH_TENANTS
    batches = [samples[i : i + BATCH_TENANTS] for i in range(0, whole, BATCH_TENANTS)]
    if batches:
        targets["contexts_batch_100"] = [
            Target("POST", "/api/v1/contexts/batch", orjson.dumps({"tenant_ids": batch}))
            for batch in batches
        ]
    return targets


# Endpoints whose answers are megabytes: a 32-connection load would only measure the
# queueing in front of them, so they run with fewer connections.
HEAVY = {"descendants_10000": 4}


async def measure_reads(
    base_url: str,
    headers: dict[str, str],
    seed: SeedReport,
    settings: LoadSettings,
    only: Collection[str] | None = None,
) -> dict[str, EndpointFigures]:
    results: dict[str, EndpointFigures] = {}
    for name, targets in read_targets(seed).items():
        if only is not None and name not in only and "reads" not in only:
            continue
        connections = HEAVY.get(name, settings.connections)
        await run_load(
            base_url,
            targets,
            headers=headers,
            connections=connections,
            duration_s=settings.warmup_s,
            tool=settings.tool,
        )
        load = await run_load(
            base_url,
            targets,
            headers=headers,
            connections=connections,
            duration_s=settings.duration_s,
            tool=settings.tool,
        )
        series = await time_requests(
            base_url, targets, headers=headers, repeat=settings.latency_samples
        )
        results[name] = EndpointFigures(load=load.figures(), sequential=series.figures())
    return results


async def measure_latency(
    base_url: str, headers: dict[str, str], targets: Sequence[Target], samples: int
) -> SeriesFigures:
    await time_requests(base_url, targets, headers=headers, repeat=max(10, samples // 10))
    return (await time_requests(base_url, targets, headers=headers, repeat=samples)).figures()


def _create_body(slug: str, parent: str | None) -> bytes:
    return orjson.dumps({"name": f"Bench {slug}", "slug": slug, "parent_id": parent})


async def measure_writes(
    base_url: str, headers: dict[str, str], seed: SeedReport, settings: LoadSettings
) -> Writes:
    parent = seed.samples[0]
    run = time.strftime("%H%M%S")
    creates = [
        Target("POST", API, _create_body(f"bc{run}_{i}", parent))
        for i in range(settings.write_samples)
    ]
    batches = [
        Target(
            "POST",
            f"{API}/batch",
            orjson.dumps(
                {
                    "tenants": [
                        {"name": f"Batch {b} {i}", "slug": f"bb{run}_{b}_{i}", "parent_id": parent}
                        for i in range(100)
                    ]
                }
            ),
        )
        for b in range(settings.batch_samples)
    ]
    create = await time_requests(base_url, creates, headers=headers, expect=(201,))
    batch = await time_requests(base_url, batches, headers=headers, expect=(201,))
    return Writes(create=create.figures(), batch_100=batch.figures())


def _move(tenant: str, new_parent: str | None) -> Target:
    return Target("POST", f"{API}/{tenant}/move", orjson.dumps({"new_parent_id": new_parent}))


def move_subjects(seed: SeedReport) -> list[tuple[str, str, str | None, int]]:
    """(label, tenant, its parent, tenants moved) for each move size the data allows;
    each label is a field of bench.results.Moves."""
    marks = seed.landmarks
    subjects: list[tuple[str, str, str | None, int]] = []
    if "sized_10k" in marks:  # the sized subtrees (from 50,000 tenants on)
        subjects += [
            ("move_1", marks["sized_100_leaf"], marks["sized_100_leaf_parent"], 1),
            ("move_1000", marks["sized_1k"], None, 1_000),
            ("move_10000", marks["sized_10k"], None, 10_001),
        ]
    wide = seed.plan.wide_children
    if wide >= 100_000:
        subjects.append(("move_100000", marks["wide_root"], None, wide + 1))
    return subjects


async def measure_moves(
    base_url: str, headers: dict[str, str], seed: SeedReport, settings: LoadSettings
) -> Moves:
    """Each subtree moved under another root and back. For the largest, the back move
    runs while a fixed-rate read load runs; its p99 is compared with the same load's
    p99 before any move."""
    target = seed.landmarks["move_target"]
    results = Moves()
    subjects = move_subjects(seed)
    for label, tenant, parent, size in subjects:
        rounds = 3 if size <= 1_000 else 1
        moves = [_move(tenant, target), _move(tenant, parent)] * rounds
        if (label, tenant, parent, size) == subjects[-1]:
            interference = await _move_with_load(base_url, headers, seed, moves[0], moves[1])
            timed = interference.moves
            figures = MoveFigures(
                tenants_moved=size,
                count=timed.count,
                errors=timed.errors,
                each_ms=timed.each_ms,
                max_ms=timed.max_ms,
            )
            results = msgspec.structs.replace(results, interference=interference)
        else:
            series = (
                await time_requests(
                    base_url, moves, headers=headers, expect=(200,), timeout_s=MOVE_TIMEOUT_S
                )
            ).figures()
            figures = MoveFigures(
                tenants_moved=size,
                count=series.count,
                errors=series.errors,
                p50_ms=series.p50_ms,
                p99_ms=series.p99_ms,
                max_ms=series.max_ms,
                mean_ms=series.mean_ms,
                statuses=series.statuses,
                first_error=series.first_error,
            )
        results = msgspec.structs.replace(results, **{label: figures})
    return results


def _background_targets(seed: SeedReport) -> list[Target]:
    reads = [Target("GET", f"{API}/{tid}") for tid in seed.samples[:100]]
    return [*reads, Target("GET", f"{API}/{seed.landmarks['context_d10']}/context")]


INTERFERENCE_RATE = 200.0
INTERFERENCE_ROUNDS = 2


async def _move_with_load(
    base_url: str, headers: dict[str, str], seed: SeedReport, there: Target, back: Target
) -> Interference:
    """The largest move's effect on other requests. A first move (no load) gives the
    window; then, INTERFERENCE_ROUNDS times, a fixed-rate read load runs for that window
    on a quiet service and again while a move runs (back, then there again). The ratio
    compares the median p99 of the loads during moves with that of the quiet loads."""
    background = _background_targets(seed)

    async def load(window: float) -> LoadResult:
        return await run_load(
            base_url, background, headers=headers, connections=16, duration_s=window,
            rate=INTERFERENCE_RATE, tool="python",
        )  # fmt: skip

    first = await time_requests(
        base_url, [there], headers=headers, expect=(200,), timeout_s=MOVE_TIMEOUT_S
    )
    window = max(2.0, first.max_ms / 1000)
    timed: list[SeriesResult] = [first]
    quiet: list[LoadResult] = []
    during: list[LoadResult] = []
    for move in [back, there][:INTERFERENCE_ROUNDS]:
        quiet.append(await load(window))
        load_task = asyncio.create_task(load(window))
        timed.append(
            await time_requests(
                base_url, [move], headers=headers, expect=(200,), timeout_s=MOVE_TIMEOUT_S
            )
        )
        during.append(await load_task)
    if len(timed) % 2:  # an odd number of moves leaves the subtree under the spare root
        timed.append(
            await time_requests(
                base_url, [back], headers=headers, expect=(200,), timeout_s=MOVE_TIMEOUT_S
            )
        )
    quiet_p99 = statistics.median(r.p99_ms for r in quiet)
    during_p99 = statistics.median(r.p99_ms for r in during)
    return Interference(
        moves=InterferenceMoves(
            count=len(timed),
            errors=sum(t.errors for t in timed),
            each_ms=[t.max_ms for t in timed],
            max_ms=max(t.max_ms for t in timed),
        ),
        rate_rps=INTERFERENCE_RATE,
        window_s=round(window, 2),
        quiet=[r.figures() for r in quiet],
        during_move=[r.figures() for r in during],
        quiet_p99_ms=quiet_p99,
        during_p99_ms=during_p99,
        p99_ratio=round(during_p99 / quiet_p99, 2) if quiet_p99 else None,
    )
