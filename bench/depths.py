"""Context and ancestors latency against depth, down the seeded chain of depth 31, with
the read cache off (a cached answer costs the same at every depth; the database path is
what depth changes)."""

from __future__ import annotations

from bench.environment import ServiceProcess, free_port
from bench.http_suite import API, measure_latency
from bench.loadgen import Target
from bench.results import DepthPoint, DepthSweep
from bench.seed import SeedReport

DEPTHS = (1, 2, 4, 8, 12, 16, 20, 24, 28, 31)


async def measure_depths(
    env: dict[str, str], headers: dict[str, str], seed: SeedReport, samples: int
) -> DepthSweep:
    service = ServiceProcess({**env, "READ_CACHE_SIZE": "0"}, free_port())
    await service.start()
    points = []
    try:
        for depth in DEPTHS:
            tenant = seed.landmarks.get(f"deep31_d{depth}")
            if tenant is None:
                continue
            timed = {
                what: await measure_latency(
                    service.base_url, headers, [Target("GET", f"{API}/{tenant}/{what}")], samples
                )
                for what in ("context", "ancestors")
            }
            points.append(
                DepthPoint(depth=depth, context=timed["context"], ancestors=timed["ancestors"])
            )
    finally:
        await service.stop()
    return DepthSweep(read_cache="off", points=points)
