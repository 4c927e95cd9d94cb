"""The mixed-workload benchmark: contexts of thousands of tenants read under load while
config writes (and subtree moves) arrive at fixed rates, as a SaaS back end reads while
admins change things (docs/performance.md).

Each phase runs the read load (wrk, or the Python generator, over every picked leaf's
context in turn) and, beside it, open-loop writers at their fixed rates, each with its
own API key: PUT config to the tenants WRITE_DEPTH levels below their roots, and moves
of one subtree (holding some of the read tenants) to a spare root and back. The read
rate is reported against B_db of the same run and against the phase without writes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import orjson

from bench.environment import ServiceProcess, free_port, run_cli
from bench.http_suite import API, LoadSettings
from bench.loadgen import LoadResult, Target, run_load, time_requests
from bench.mixed_picks import WRITE_DEPTH, MixedPicks
from bench.results import LoadFigures, Mixed, MixedPhase, WriterFigures
from bench.seed import SeedReport

WRITE_RATES = (0.0, 5.0, 50.0)
MOVE_RATES = (0.0, 1.0)
# In flight at once per writer: enough for 50/s even when a write takes 300 ms under load.
WRITER_CONNECTIONS = 16
CONFIG_KEY = "bench.mixed"


def phases(write_rates: Sequence[float] = WRITE_RATES) -> list[tuple[float, float]]:
    """(writes/s, moves/s) of each phase, the quiet one first."""
    return [(writes, moves) for moves in MOVE_RATES for writes in write_rates]


def config_writes(picks: MixedPicks, phase: int = 0) -> list[Target]:
    """Two rounds over the written tenants with values of this phase alone, so every
    write changes its tenant: a write of the value a tenant already holds changes nothing
    and costs almost nothing, and every phase starts again from the first tenant."""
    tenants = picks.writes
    return [
        Target(
            "PUT",
            f"{API}/{tenants[i % len(tenants)]}/config/{CONFIG_KEY}",
            orjson.dumps({"value": {"phase": phase, "write": i}}),
        )
        for i in range(2 * len(tenants))
    ]


def moves(picks: MixedPicks, spare_root: str) -> tuple[Target, Target]:
    assert picks.move_subject is not None
    path = f"{API}/{picks.move_subject}/move"
    return (
        Target("POST", path, orjson.dumps({"new_parent_id": spare_root})),
        Target("POST", path, orjson.dumps({"new_parent_id": picks.move_parent})),
    )


def writer_figures(rate: float, planned_s: float, result: LoadResult) -> WriterFigures:
    """Answers that were not errors per second of the phase (or of the writer's own run,
    when its last requests were answered after the phase's end)."""
    achieved = max(0, result.requests - result.errors) / max(planned_s, result.duration_s)
    return WriterFigures(rate_per_s=rate, achieved_per_s=round(achieved, 2), load=result.figures())


def ratio(value: float, base: float | None) -> float | None:
    return round(value / base, 3) if base else None


def summarise(
    picks: MixedPicks,
    b_db_rps: float | None,
    measured: Sequence[
        tuple[float, float, LoadFigures, WriterFigures | None, WriterFigures | None]
    ],
) -> Mixed:
    quiet = next((reads.rps for w, m, reads, _, _ in measured if w == 0 and m == 0), None)
    return Mixed(
        read_tenants=len(picks.reads),
        write_tenants=len(picks.writes),
        write_depth=WRITE_DEPTH,
        moved_tenants=picks.moved_tenants,
        b_db_rps=b_db_rps,
        phases=[
            MixedPhase(
                writes_per_s=w,
                moves_per_s=m,
                reads=reads,
                writes=writes,
                moves=moved,
                x_b_db=ratio(reads.rps, b_db_rps),
                x_no_writes=ratio(reads.rps, quiet),
            )
            for w, m, reads, writes, moved in measured
        ],
    )


async def _writer_key(env: dict[str, str]) -> dict[str, str]:
    created = json.loads(
        await run_cli(
            env, "api-keys", "create", "--name", "bench-writer", "--scopes", "read,write,admin",
            "--json",
        )
    )  # fmt: skip
    return {"X-API-Key": created["plaintext_key"]}


async def measure_mixed(
    env: dict[str, str],
    headers: dict[str, str],
    seed: SeedReport,
    settings: LoadSettings,
    b_db_rps: float | None,
    write_rates: Sequence[float] = WRITE_RATES,
) -> Mixed:
    """Every phase on one fresh service process (read cache on, as deployed)."""
    picks = seed.mixed
    if picks is None or not picks.reads:
        raise ValueError("the seeded data has no tenants for the mixed workload")
    reads = [Target("GET", f"{API}/{tid}/context") for tid in picks.reads]
    there, back = moves(picks, seed.landmarks["move_target"])
    writer_headers = await _writer_key(env)
    # wrk runs whole seconds; the writers run as long.
    duration = max(1.0, round(settings.duration_s))
    service = ServiceProcess(env, free_port())
    await service.start()
    base = service.base_url

    async def writer(targets: list[Target], rate: float, connections: int) -> WriterFigures:
        result = await run_load(
            base, targets, headers=writer_headers, connections=connections,
            duration_s=duration, rate=rate, tool="python",
        )  # fmt: skip
        return writer_figures(rate, duration, result)

    measured = []
    try:
        # Warm the read cache and the connections: every context at least once.
        await run_load(
            base, reads, headers=headers, connections=settings.connections,
            duration_s=max(settings.warmup_s, 1.0), tool=settings.tool,
        )  # fmt: skip
        for phase, (write_rate, move_rate) in enumerate(phases(write_rates), start=1):
            write_task = (
                asyncio.create_task(
                    writer(config_writes(picks, phase), write_rate, WRITER_CONNECTIONS)
                )
                if write_rate
                else None
            )
            # One move at a time (one connection): there and back strictly alternate.
            move_task = (
                asyncio.create_task(writer([there, back], move_rate, 1)) if move_rate else None
            )
            read = await run_load(
                base, reads, headers=headers, connections=settings.connections,
                duration_s=duration, tool=settings.tool,
            )  # fmt: skip
            write_figures = None if write_task is None else await write_task
            move_figures = None if move_task is None else await move_task
            if move_figures is not None and move_figures.load.requests % 2:
                # An odd number of moves left the subtree under the spare root.
                await time_requests(base, [back], headers=writer_headers)
            measured.append((write_rate, move_rate, read.figures(), write_figures, move_figures))
    finally:
        await service.stop()
    return summarise(picks, b_db_rps, measured)
