"""Request counts and latencies of a single process, kept as plain numbers.

prometheus_client's Counter and Histogram take a lock on every increment and look up
their bucket in Python: about 2.7 of a cached read's 52 microseconds of CPU. When the
process answers its own scrapes (no PROMETHEUS_MULTIPROC_DIR) nothing else reads the
figures between two scrapes, so a request adds to Python integers and the families are
built when a scrape asks. The series, names and bucket bounds are those of the
prometheus_client metrics service/observability/metrics.py declares for the multiprocess case.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class Latency:
    """One (method, route)'s histogram: observations per bucket (not cumulative)."""

    __slots__ = ("buckets", "total")

    def __init__(self, size: int) -> None:
        self.buckets = [0] * size
        self.total = 0.0


class Counted:
    """One (method, route, status) series: its count and its route's latency."""

    __slots__ = ("count", "latency")

    def __init__(self, latency: Latency) -> None:
        self.count = 0
        self.latency = latency


class RequestFigures(Collector):
    def __init__(
        self, requests_name: str, latency_name: str, bounds: Sequence[float], docs: tuple[str, str]
    ) -> None:
        self.requests_name = requests_name
        self.latency_name = latency_name
        # prometheus_client's own rule: an observation goes to the first bound >= it.
        self.bounds = (*(float(b) for b in bounds), math.inf)
        self._labels = tuple(floatToGoString(b) for b in self.bounds)  # type: ignore[no-untyped-call]
        self._docs = docs
        self.counted: dict[tuple[str, str, str], Counted] = {}
        self.latencies: dict[tuple[str, str], Latency] = {}

    def series(self, method: str, route: str, status: str) -> Counted:
        """The series of (method, route, status), made on first use: asked for again
        (its caller may not keep it), it keeps counting where it was."""
        counted = self.counted.get((method, route, status))
        if counted is None:
            latency = self.latencies.get((method, route))
            if latency is None:
                latency = self.latencies[(method, route)] = Latency(len(self.bounds))
            counted = self.counted[(method, route, status)] = Counted(latency)
        return counted

    def observe(self, counted: Counted, seconds: float) -> None:
        counted.count += 1
        latency = counted.latency
        latency.total += seconds
        latency.buckets[bisect_left(self.bounds, seconds)] += 1

    def collect(self) -> Iterable[Metric]:
        requests = CounterMetricFamily(
            self.requests_name, self._docs[0], labels=["method", "route", "status"]
        )
        for labels, counted in sorted(self.counted.items()):
            requests.add_metric(list(labels), counted.count)
        yield requests
        latency = HistogramMetricFamily(
            self.latency_name, self._docs[1], labels=["method", "route"]
        )
        for route, figures in sorted(self.latencies.items()):
            cumulative, running = [], 0
            for label, count in zip(self._labels, figures.buckets, strict=True):
                running += count
                cumulative.append((label, running))
            latency.add_metric(list(route), cumulative, sum_value=figures.total)
        yield latency
