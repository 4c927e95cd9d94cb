"""CPU of a read from the Python client's ContextCache and of an OpenFeature evaluation
through TenantContextProvider, against B_http measured in process in the same run.

    python -m bench.client_cpu [--database-url URL] [--contexts 10001] [--reads 200000]

B_http is bench/request_cpu.py's in-process measurement of the baseline app (its pool
needs a PostgreSQL: --database-url, else the embedded server under .data/bench). The
cache holds `--contexts` contexts shaped as GET /context answers them (12 config keys of
every JSON type, 4 permissions), loaded through the cache's own hydration from a
scripted answer: the read path does not depend on where the contexts came from. Each round
measures B_http and then each read (CPU time, time.process_time); a figure's ratio is the
median over the rounds of its ratio to that round's B_http. Targets: a value read
<= 0.05 x B_http, an evaluation <= 0.5 x. Two figures apart the evaluation: the provider
alone (its resolve_string_details called directly) and the SDK's floor (the same
evaluations through a provider that returns one prebuilt answer). A last one is the
first evaluation of a flag after its tenant's context changed, when the provider builds
the result it then keeps (the evaluation row repeats evaluations, as applications do).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from openfeature import api as openfeature_api
from openfeature.evaluation_context import EvaluationContext
from openfeature.flag_evaluation import FlagResolutionDetails, Reason
from openfeature.provider import AbstractProvider, Metadata

from bench.baselines import create_baseline_app
from bench.environment import PostgresServer
from bench.request_cpu import _request, measure
from service.observability.logs import configure_logging
from service.server import new_event_loop
from tenant_context import Client, ContextCache
from tenant_context.openfeature import TenantContextProvider

READ_TARGET = 0.05
EVALUATION_TARGET = 0.5
KEYS = [f"setting_{i}" for i in range(12)]


def _context(tenant_id: str, root: str) -> dict[str, Any]:
    values: list[Any] = ["pro", 42, 0.5, True, {"rps": 10, "regions": ["eu"]}, ["a", "b"]]
    config = {
        key: {"key": key, "value": values[i % len(values)], "source_tenant_id": root,
              "inherited": True, "locked": i % 5 == 0}
        for i, key in enumerate(KEYS)
    }  # fmt: skip
    permissions = {
        f"perm_{i}": {"key": f"perm_{i}", "value": i % 2 == 0, "mode": "INHERIT",
                      "source_tenant_id": root, "locked": False, "delegated": False}
        for i in range(4)
    }  # fmt: skip
    return {
        "tenant_id": tenant_id, "ancestry_path": f"/{root}/{tenant_id}", "depth": 1,
        "isolation_strategy": "SHARED_RLS", "resolved_config": config,
        "resolved_permissions": permissions,
    }  # fmt: skip


def loaded_cache(count: int) -> tuple[ContextCache, list[str]]:
    root = str(uuid.uuid4())
    ids = [root] + [str(uuid.uuid4()) for _ in range(count - 1)]
    body = json.dumps([_context(tenant_id, root) for tenant_id in ids]).encode()

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/contexts"):
            headers = {"X-Revision": "1", "Content-Type": "application/json"}
            return httpx.Response(200, content=body, headers=headers)
        # The change stream: open and idle (its thread waits, costing no CPU).
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, stream=_Idle())

    http = httpx.Client(transport=httpx.MockTransport(answer))
    return ContextCache(Client("http://bench.invalid", http=http), root).start(), ids


class _Idle(httpx.SyncByteStream):
    def __init__(self) -> None:
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield b": connected\n\n"
        self.closed.wait()

    def close(self) -> None:
        self.closed.set()


class _Constant(AbstractProvider):
    """One prebuilt answer for every flag: an evaluation through it is the SDK's own
    pipeline and nothing else (the floor under any provider)."""

    answer = FlagResolutionDetails(value="pro", reason=Reason.CACHED, flag_metadata={})

    def get_metadata(self) -> Metadata:
        return Metadata(name="constant")

    def resolve_boolean_details(
        self,
        flag_key: str,
        default_value: bool,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[bool]:
        raise NotImplementedError

    def resolve_string_details(
        self, flag_key: str, default_value: str, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[str]:
        return self.answer

    def resolve_integer_details(
        self, flag_key: str, default_value: int, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[int]:
        raise NotImplementedError

    def resolve_float_details(
        self,
        flag_key: str,
        default_value: float,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[float]:
        raise NotImplementedError

    def resolve_object_details(
        self, flag_key: str, default_value: Any, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[Any]:
        raise NotImplementedError


def per_call(work: Callable[[int], None], count: int, rounds: int) -> float:
    """Median CPU microseconds per call over `rounds` rounds of `count` calls."""
    work(min(count, 10_000))
    gc.collect()
    figures = []
    for _ in range(rounds):
        started = time.process_time()
        work(count)
        figures.append((time.process_time() - started) / count * 1e6)
    return statistics.median(figures)


def client_figures(
    count: int, reads: int, rounds: int, baseline: Callable[[], float]
) -> dict[str, list[float]]:
    """Per round: B_http, then each client read, so that each ratio compares figures
    taken moments apart (the machine's load moves between rounds, not within one)."""
    cache, ids = loaded_cache(count)
    rng = random.Random(7)
    picks = [(rng.choice(ids), rng.choice(KEYS)) for _ in range(4096)]
    get = cache.get

    def read(n: int) -> None:
        for _ in range(n // len(picks)):
            for tenant_id, key in picks:
                get(tenant_id)["resolved_config"][key]["value"]  # type: ignore[index]

    provider = TenantContextProvider(cache)
    openfeature_api.set_provider_and_wait(provider, domain="bench")
    flags = openfeature_api.get_client("bench")
    string_picks = [(tenant_id, "setting_0") for tenant_id, _ in picks]

    def evaluate(n: int) -> None:
        for _ in range(n // len(picks)):
            for tenant_id, key in string_picks:
                flags.get_string_value(key, "free", EvaluationContext(tenant_id))

    openfeature_api.set_provider_and_wait(_Constant(), domain="bench-floor")
    floor_flags = openfeature_api.get_client("bench-floor")

    def floor(n: int) -> None:
        # The same calls through the SDK with a provider that does nothing.
        for _ in range(n // len(picks)):
            for tenant_id, key in string_picks:
                floor_flags.get_string_value(key, "free", EvaluationContext(tenant_id))

    # The provider builds a result once per tenant's context and flag and keeps it until
    # the context changes: these evaluations, of 4,096 distinct tenants, each come first
    # after their tenant's results were dropped (as after a change; the drop is timed too,
    # a dict's clear, about 1 % of the figure).
    first_picks = [(tenant_id, "setting_0") for tenant_id in rng.sample(ids, len(picks))]
    first_derived = [cache._derived[tenant_id] for tenant_id, _ in first_picks]

    def evaluate_first(n: int) -> None:
        for _ in range(n // len(picks)):
            for derived in first_derived:
                derived.clear()
            for tenant_id, key in first_picks:
                flags.get_string_value(key, "free", EvaluationContext(tenant_id))

    contexts = [(EvaluationContext(tenant_id), key) for tenant_id, key in string_picks]

    def resolve(n: int) -> None:
        # The provider alone: what the SDK's evaluation adds is the rest.
        for _ in range(n // len(picks)):
            for context, key in contexts:
                provider.resolve_string_details(key, "free", context)

    evaluations = max(reads // 10 // len(picks), 1) * len(picks)
    reads = max(reads // len(picks), 1) * len(picks)
    figures: dict[str, list[float]] = {
        "B_http": [], "cache_read": [], "openfeature_evaluation": [], "provider_resolve_alone": [],
        "openfeature_sdk_floor": [], "openfeature_first_evaluation": [],
    }  # fmt: skip
    try:
        for _ in range(rounds):
            figures["B_http"].append(baseline())
            figures["cache_read"].append(per_call(read, reads, 1))
            figures["openfeature_evaluation"].append(per_call(evaluate, evaluations, 1))
            figures["provider_resolve_alone"].append(per_call(resolve, evaluations, 1))
            figures["openfeature_sdk_floor"].append(per_call(floor, evaluations, 1))
            figures["openfeature_first_evaluation"].append(per_call(evaluate_first, evaluations, 1))
        return figures
    finally:
        openfeature_api.clear_providers()
        cache.close()


def b_http(dsn: str, requests: int, rounds: int) -> float:
    loop = new_event_loop()
    try:
        app = create_baseline_app(dsn, 2)
        median, _ = loop.run_until_complete(
            measure(app, lambda _: _request("GET", "/http", {}), requests, rounds)
        )
        return median
    finally:
        loop.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.client_cpu", description=__doc__)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--data-dir", type=Path, default=Path(".data/bench"))
    parser.add_argument("--contexts", type=int, default=10_001)
    parser.add_argument("--reads", type=int, default=200_000, help="per round")
    parser.add_argument("--requests", type=int, default=5_000, help="B_http, per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    configure_logging("warning")
    with PostgresServer(args.database_url, args.data_dir) as server:
        figures = client_figures(
            args.contexts, args.reads, args.rounds,
            lambda: b_http(server.admin_dsn, args.requests, 1),
        )  # fmt: skip
    targets = {"cache_read": READ_TARGET, "openfeature_evaluation": EVALUATION_TARGET,
               "provider_resolve_alone": EVALUATION_TARGET,
               "openfeature_sdk_floor": EVALUATION_TARGET,
               "openfeature_first_evaluation": EVALUATION_TARGET}  # fmt: skip
    baseline = figures.pop("B_http")
    print(f"{'measure':26} {'median us':>10} {'x B_http':>9} {'range':>17} {'target':>7}  met")
    print(f"{'B_http (in process)':26} {statistics.median(baseline):10.3f} {1.0:9.4f}")
    for name, values in figures.items():
        ratios = [value / base for value, base in zip(values, baseline, strict=True)]
        ratio = statistics.median(ratios)
        met = "yes" if ratio <= targets[name] else "NO"
        spread = f"{min(ratios):.4f}-{max(ratios):.4f}"
        print(f"{name:26} {statistics.median(values):10.3f} {ratio:9.4f} {spread:>17} "
              f"{targets[name]:7.2f}  {met}")  # fmt: skip


if __name__ == "__main__":
    main()
