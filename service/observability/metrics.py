"""Prometheus metrics: requests, latency, the database pool, the delivery queue, webhook
attempts, rate-limit refusals, the process and runtime collectors and build_info.

Each app has its own registry, so several apps in one process (the tests) never share
counters. Under `serve --workers N` the parent gives every worker one
PROMETHEUS_MULTIPROC_DIR: counters and histograms are then written to files there and
whichever worker answers a scrape reports the sum over all of them, so a scrape through
the shared port never sees one worker's numbers jump to another's.

The process and GC collectors read the answering process only (prometheus_client cannot
merge them through the directory); under --workers their series carry a `pid` label, so
each scrape says whose figures they are instead of one series jumping between workers.
The platform collector and build_info are the same in every worker.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable, Iterable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Protocol, TypeVar

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from service.observability.request_figures import Counted, RequestFigures

NAMESPACE = "tenant_service"
# Deliveries waiting and dead-lettered; successes are not counted (that count only grows).
DELIVERY_STATUSES = ("pending", "failed")
# A scrape counts each status up to this many rows (sql/queries/metrics.sql).
COUNT_CAP = 10_001
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
WEBHOOK_OUTCOMES = ("success", "failure", "dead_letter")
DISTRIBUTION = "tenant-hierarchy-service"
# Request series remembered for reuse: routes and statuses are few; this caps free text.
MAX_CACHED_SERIES = 4096
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
# Where a (method, route, status) is counted, with its 429 counter: this process's
# figures, or the Counter and Histogram children of the shared directory.
_Local = tuple[Counted, Counter | None]
_Shared = tuple[Counter, Histogram, Counter | None]
S = TypeVar("S", _Local, _Shared)

# `_created` timestamps double the output and no dashboard of ours reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]


def service_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


class _DatabaseSnapshot(Collector):
    """Figures read from the database just before a scrape (valid for every worker)."""

    def __init__(self) -> None:
        self.database_up = 0
        self.deliveries: dict[str, int] = {}

    def collect(self) -> Iterable[Metric]:
        up = GaugeMetricFamily(
            f"{NAMESPACE}_database_up", "1 when the database answered the last scrape"
        )
        up.add_metric([], self.database_up)
        yield up
        if not self.database_up:
            return
        queue = GaugeMetricFamily(
            f"{NAMESPACE}_webhook_deliveries",
            "Webhook deliveries pending or failed (queue depth, dead letters); counted up "
            f"to {COUNT_CAP}, which reads as more than {COUNT_CAP - 1}",
            labels=["status"],
        )
        statuses = dict.fromkeys(DELIVERY_STATUSES, 0) | self.deliveries
        for status, count in sorted(statuses.items()):
            queue.add_metric([status], count)
        yield queue
        dead = GaugeMetricFamily(
            f"{NAMESPACE}_webhook_dead_letters",
            f"Webhook deliveries that gave up (dead letters); counted up to {COUNT_CAP}",
        )
        dead.add_metric([], statuses["failed"])
        yield dead


class _BuildInfo(Collector):
    def collect(self) -> Iterable[Metric]:
        info = GaugeMetricFamily(
            f"{NAMESPACE}_build_info",
            "Always 1; the labels say which version runs on which Python",
            labels=["version", "python"],
        )
        info.add_metric([service_version(), platform.python_version()], 1)
        yield info


class _PerProcess(Collector):
    """Another collector's series with a `pid` label (process figures under --workers)."""

    def __init__(self, inner: Collector) -> None:
        self.inner = inner

    def collect(self) -> Iterable[Metric]:
        pid = str(os.getpid())
        for family in self.inner.collect():
            samples = [
                sample._replace(labels={**sample.labels, "pid": pid}) for sample in family.samples
            ]
            family.samples = samples
            yield family


def _register_runtime(registry: CollectorRegistry, *, multiprocess: bool) -> None:
    registry.register(_BuildInfo())
    registry.register(PLATFORM_COLLECTOR)
    for collector in (PROCESS_COLLECTOR, GC_COLLECTOR):
        registry.register(_PerProcess(collector) if multiprocess else collector)


class ReplicaFigures(Protocol):
    """What the replica metrics read of one replica (service/db/replicas.py)."""

    @property
    def label(self) -> str: ...
    @property
    def lag_seconds(self) -> float: ...
    @property
    def requests(self) -> int: ...
    @property
    def skips(self) -> Mapping[str, int]: ...


class _ReplicaSnapshot(Collector):
    """Per-replica lag, reads served and skips, read from this process's replica set
    at scrape time (under several workers: the answering worker's own figures)."""

    def __init__(self) -> None:
        self.source: Callable[[], Iterable[ReplicaFigures]] = list

    def collect(self) -> Iterable[Metric]:
        replicas = list(self.source())
        lag = GaugeMetricFamily(
            f"{NAMESPACE}_db_replica_lag_seconds",
            "Replication lag of each read replica as last measured (+Inf: unknown or down)",
            labels=["replica"],
        )
        served = CounterMetricFamily(
            f"{NAMESPACE}_db_replica_reads",
            "Reads routed to each read replica",
            labels=["replica"],
        )
        skipped = CounterMetricFamily(
            f"{NAMESPACE}_db_replica_skips",
            "Times a read passed a replica over, by reason (down, lagging, behind_token, "
            "not_standby)",
            labels=["replica", "reason"],
        )
        for replica in replicas:
            lag.add_metric([replica.label], replica.lag_seconds)
            served.add_metric([replica.label], replica.requests)
            for reason, count in sorted(replica.skips.items()):
                skipped.add_metric([replica.label, reason], count)
        yield lag
        yield served
        yield skipped


class Metrics:
    def __init__(self) -> None:
        self.multiprocess = multiprocess_dir() is not None
        # In multiprocess mode values live in files; the registry is built per scrape.
        owned = None if self.multiprocess else CollectorRegistry()
        self._owned = owned
        self._local: dict[tuple[str, str | None, int], _Local] = {}
        self._shared: dict[tuple[str, str | None, int], _Shared] = {}
        docs = (
            "HTTP requests by method, route template and status",
            "Time from receiving a request to its answer, by route template",
        )
        # One process answering its own scrapes keeps these as plain numbers
        # (service/observability/request_figures.py); workers share them through the directory.
        self.figures: RequestFigures | None = None
        if owned is not None:
            self.figures = RequestFigures(
                f"{NAMESPACE}_http_requests",
                f"{NAMESPACE}_http_request_duration_seconds",
                LATENCY_BUCKETS,
                docs,
            )
            owned.register(self.figures)
        self.requests: Counter | None = None
        self.latency: Histogram | None = None
        if owned is None:
            self.requests = Counter(
                "http_requests", docs[0], ["method", "route", "status"], namespace=NAMESPACE
            )
            self.latency = Histogram(
                "http_request_duration_seconds",
                docs[1],
                ["method", "route"],
                namespace=NAMESPACE,
                buckets=LATENCY_BUCKETS,
            )
        self.rate_limited = Counter(
            "rate_limit_refusals",
            "Requests refused with 429 by the rate limiter, by route template",
            ["route"],
            namespace=NAMESPACE,
            registry=owned,
        )
        self.jwks_fetches = Counter(
            "jwks_fetches",
            "Fetches of the identity provider's signing keys (JWKS), by outcome",
            ["outcome"],
            namespace=NAMESPACE,
            registry=owned,
        )
        # Summed over the live workers: each one reports its own pool.
        self.pool = Gauge(
            "db_pool_connections",
            "Connections of the database pools, by state (in_use, idle)",
            ["state"],
            namespace=NAMESPACE,
            registry=owned,
            multiprocess_mode="livesum",
        )
        self.pool_capacity = Gauge(
            "db_pool_max_connections",
            "The most connections the database pools may open (DB_POOL_MAX_SIZE per worker)",
            namespace=NAMESPACE,
            registry=owned,
            multiprocess_mode="livesum",
        )
        self.webhook_attempts = Counter(
            "webhook_delivery_attempts",
            "Webhook delivery attempts recorded, by outcome (success, failure, dead_letter)",
            ["outcome"],
            namespace=NAMESPACE,
            registry=owned,
        )
        self.webhook_latency = Histogram(
            "webhook_delivery_attempt_duration_seconds",
            "Time from sending a webhook delivery to its answer (or to giving up on it)",
            namespace=NAMESPACE,
            registry=owned,
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        for outcome in WEBHOOK_OUTCOMES:  # every outcome shows, at 0 until it happens
            self.webhook_attempts.labels(outcome)
        self.snapshot = _DatabaseSnapshot()
        self.replica_snapshot = _ReplicaSnapshot()
        if owned is not None:
            owned.register(self.snapshot)
            owned.register(self.replica_snapshot)
            _register_runtime(owned, multiprocess=False)

    def observe(self, method: str, route: str | None, status: int, seconds: float) -> None:
        # The series are looked up once per (method, route, status): finding them
        # through .labels() on every request was a measurable share of a cached read.
        figures = self.figures
        if figures is not None:
            local = self._local.get((method, route, status))
            if local is None:
                local = self._remember(self._local, method, route, status, self._local_for)
            figures.observe(local[0], seconds)
            limited = local[1]
        else:
            shared = self._shared.get((method, route, status))
            if shared is None:
                shared = self._remember(self._shared, method, route, status, self._shared_for)
            shared[0].inc()
            shared[1].observe(seconds)
            limited = shared[2]
        if limited is not None:
            limited.inc()

    @staticmethod
    def _remember(
        known: dict[tuple[str, str | None, int], S],
        method: str,
        route: str | None,
        status: int,
        make: Callable[[str, str, int], S],
    ) -> S:
        label = route or UNMATCHED_ROUTE  # raw paths would make a series per id
        series = make(method if method in KNOWN_METHODS else "OTHER", label, status)
        if len(known) < MAX_CACHED_SERIES:  # unknown methods are free text
            known[(method, route, status)] = series
        return series

    def _limited(self, route: str, status: int) -> Counter | None:
        return self.rate_limited.labels(route) if status == 429 else None

    def _local_for(self, method: str, route: str, status: int) -> _Local:
        assert self.figures is not None
        return self.figures.series(method, route, str(status)), self._limited(route, status)

    def _shared_for(self, method: str, route: str, status: int) -> _Shared:
        assert self.requests is not None
        assert self.latency is not None
        return (
            self.requests.labels(method, route, str(status)),
            self.latency.labels(method, route),
            self._limited(route, status),
        )

    def count_jwks_fetch(self, outcome: str) -> None:
        self.jwks_fetches.labels(outcome).inc()

    def set_pool(self, size: int, idle: int, maximum: int) -> None:
        self.pool.labels("in_use").set(size - idle)
        self.pool.labels("idle").set(idle)
        self.pool_capacity.set(maximum)

    def count_webhook_attempt(self, outcome: str, seconds: float) -> None:
        self.webhook_attempts.labels(outcome).inc()
        self.webhook_latency.observe(seconds)

    def watch_replicas(self, source: Callable[[], Iterable[ReplicaFigures]]) -> None:
        self.replica_snapshot.source = source

    def set_database(self, deliveries: dict[str, int] | None) -> None:
        self.snapshot.database_up = 0 if deliveries is None else 1
        self.snapshot.deliveries = deliveries or {}

    def exposition(self) -> bytes:
        registry = self._owned
        if registry is None:
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            registry.register(self.snapshot)
            registry.register(self.replica_snapshot)
            _register_runtime(registry, multiprocess=True)
        return generate_latest(registry)

    content_type = CONTENT_TYPE_LATEST


def mark_worker_dead(pid: int, path: str) -> None:
    """Drop a stopped worker's live gauges from the shared directory (called by the parent)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
