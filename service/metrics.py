"""Prometheus metrics: requests, latency, the database pool, the delivery queue and
rate-limit refusals.

Each app has its own registry, so several apps in one process (the tests) never share
counters. Under `serve --workers N` the parent gives every worker one
PROMETHEUS_MULTIPROC_DIR: counters and histograms are then written to files there and
whichever worker answers a scrape reports the sum over all of them, so a scrape through
the shared port never sees one worker's numbers jump to another's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

NAMESPACE = "tenant_service"
DELIVERY_STATUSES = ("pending", "success", "failed")
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


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
            "Webhook deliveries by status (the delivery queue depth)",
            labels=["status"],
        )
        statuses = dict.fromkeys(DELIVERY_STATUSES, 0) | self.deliveries
        for status, count in sorted(statuses.items()):
            queue.add_metric([status], count)
        yield queue


class Metrics:
    def __init__(self) -> None:
        self.multiprocess = multiprocess_dir() is not None
        # In multiprocess mode values live in files; the registry is built per scrape.
        owned = None if self.multiprocess else CollectorRegistry()
        self._owned = owned
        self.requests = Counter(
            "http_requests",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            namespace=NAMESPACE,
            registry=owned,
        )
        self.latency = Histogram(
            "http_request_duration_seconds",
            "Time from receiving a request to its answer, by route template",
            ["method", "route"],
            namespace=NAMESPACE,
            registry=owned,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.rate_limited = Counter(
            "rate_limit_refusals",
            "Requests refused with 429 by the rate limiter, by route template",
            ["route"],
            namespace=NAMESPACE,
            registry=owned,
        )
        # Summed over the live workers: each one reports its own pool.
        self.pool = Gauge(
            "db_pool_connections",
            "Connections of the database pools, by state (in_use, idle, max)",
            ["state"],
            namespace=NAMESPACE,
            registry=owned,
            multiprocess_mode="livesum",
        )
        self.snapshot = _DatabaseSnapshot()
        if owned is not None:
            owned.register(self.snapshot)

    def observe(self, method: str, route: str | None, status: int, seconds: float) -> None:
        method = method if method in KNOWN_METHODS else "OTHER"
        label = route or UNMATCHED_ROUTE  # raw paths would make a series per id
        self.requests.labels(method, label, str(status)).inc()
        self.latency.labels(method, label).observe(seconds)
        if status == 429:
            self.rate_limited.labels(label).inc()

    def set_pool(self, size: int, idle: int, maximum: int) -> None:
        self.pool.labels("in_use").set(size - idle)
        self.pool.labels("idle").set(idle)
        self.pool.labels("max").set(maximum)

    def set_database(self, deliveries: dict[str, int] | None) -> None:
        self.snapshot.database_up = 0 if deliveries is None else 1
        self.snapshot.deliveries = deliveries or {}

    def exposition(self) -> bytes:
        registry = self._owned
        if registry is None:
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            registry.register(self.snapshot)
        return generate_latest(registry)

    content_type = CONTENT_TYPE_LATEST


def mark_worker_dead(pid: int, path: str) -> None:
    """Drop a stopped worker's live gauges from the shared directory (called by the parent)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
