"""The request figures a single process keeps as plain numbers expose exactly what
prometheus_client's Counter and Histogram (kept under several workers) expose for the
same requests: names, labels, bucket bounds, counts and sums."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from service.observability.metrics import LATENCY_BUCKETS, NAMESPACE
from service.observability.request_figures import RequestFigures

DOCS = ("requests help", "latency help")
# On a bound, between bounds, below the first, past the last, and one route twice.
OBSERVED = [
    ("GET", "/api/v1/tenants/{id}", "200", 0.001),
    ("GET", "/api/v1/tenants/{id}", "200", 0.0011),
    ("GET", "/api/v1/tenants/{id}", "304", 0.00001),
    ("GET", "/api/v1/tenants/{id}", "404", 2.5),
    ("POST", "/api/v1/tenants", "201", 11.0),
    ("GET", "unmatched", "404", 0.3),
]


def test_plain_figures_expose_what_prometheus_client_exposes() -> None:
    theirs = CollectorRegistry()
    requests = Counter(
        "http_requests", DOCS[0], ["method", "route", "status"],
        namespace=NAMESPACE, registry=theirs,
    )  # fmt: skip
    latency = Histogram(
        "http_request_duration_seconds", DOCS[1], ["method", "route"],
        namespace=NAMESPACE, registry=theirs, buckets=LATENCY_BUCKETS,
    )  # fmt: skip
    ours = CollectorRegistry()
    figures = RequestFigures(
        f"{NAMESPACE}_http_requests",
        f"{NAMESPACE}_http_request_duration_seconds",
        LATENCY_BUCKETS,
        DOCS,
    )
    ours.register(figures)
    series = {}
    for method, route, status, seconds in OBSERVED:
        requests.labels(method, route, status).inc()
        latency.labels(method, route).observe(seconds)
        key = (method, route, status)
        if key not in series:
            series[key] = figures.series(method, route, status)
        figures.observe(series[key], seconds)
    expected = sorted(generate_latest(theirs).decode().splitlines())
    assert sorted(generate_latest(ours).decode().splitlines()) == expected
    assert 'le="0.001"' in "\n".join(expected)  # the comparison did see buckets


def test_a_series_asked_for_again_keeps_its_count() -> None:
    """Metrics stops remembering series past MAX_CACHED_SERIES and asks again per
    request; the count must go on, as prometheus_client's .labels() children do."""
    figures = RequestFigures("requests", "latency", LATENCY_BUCKETS, DOCS)
    for _ in range(3):
        figures.observe(figures.series("OTHER", "unmatched", "404"), 0.01)
    assert figures.series("OTHER", "unmatched", "404").count == 3
    assert figures.latencies[("OTHER", "unmatched")].buckets[3] == 3
