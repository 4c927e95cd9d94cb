"""GET /metrics: Prometheus text with requests by route template and status, latency,
pool usage, delivery queue depth and rate-limit refusals. On the API port only with
METRICS_TOKEN (else 404); on METRICS_PORT's listener; a scrape's database work is bounded
whatever the tables hold."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from service.app import create_app
from service.base.ids import uuid7
from service.http.appkeys import SETTINGS
from service.observability.metrics_listener import metrics_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.access import as_key, create_key

TOKEN = "mT0k3n-" + "Zq8xW2vR9pL4sK7jH3gF6dS1aQ5eY0uIoP"
SCRAPER = {"Authorization": f"Bearer {TOKEN}"}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    return fresh_db_url  # the delivery counts must be this test's own


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"METRICS_TOKEN": TOKEN}


async def scrape(client: TestClient) -> Samples:
    resp = await client.get("/metrics", headers=SCRAPER)
    assert resp.status == 200
    assert resp.content_type == "text/plain"
    samples: Samples = {}
    for family in text_string_to_metric_families(await resp.text()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_requests_are_counted_by_route_template_and_status(
    client: TestClient, admin: dict[str, str]
) -> None:
    missing = uuid.uuid4()
    for _ in range(2):
        assert (await client.get("/api/v1/tenants", headers=admin)).status == 200
    assert (await client.get(f"/api/v1/tenants/{missing}", headers=admin)).status == 404
    assert (await client.get(f"/api/v1/tenants/{missing}")).status == 401
    assert (await client.get(f"/no/such/{missing}")).status == 404

    samples = await scrape(client)
    requests = "tenant_service_http_requests_total"
    assert value(samples, requests, method="GET", route="/api/v1/tenants", status="200") == 2
    route = "/api/v1/tenants/{id}"
    assert value(samples, requests, method="GET", route=route, status="404") == 1
    assert value(samples, requests, method="GET", route=route, status="401") == 1
    assert value(samples, requests, method="GET", route="unmatched", status="404") == 1
    # No label carries a concrete id: raw paths would make one series per tenant.
    assert not any(str(missing) in str(labels) for _, labels in samples)
    latency = "tenant_service_http_request_duration_seconds"
    assert value(samples, f"{latency}_count", method="GET", route="/api/v1/tenants") == 2
    assert value(samples, f"{latency}_bucket", method="GET", route=route, le="+Inf") == 2
    assert value(samples, f"{latency}_sum", method="GET", route="/api/v1/tenants") > 0


async def test_pool_usage_and_database_figures(client: TestClient, db_conn: Any) -> None:
    tenant_id, webhook_id = uuid7(), uuid7()
    # The webhook API is not part of this test: a global webhook and its queue, as rows.
    await db_conn.execute(
        "INSERT INTO webhooks (id, url, events, encrypted_secret) "
        "VALUES ($1, 'https://example.com/h', '{tenant.created}', 'v1:00:00:00')",
        webhook_id,
    )
    for status, count in (("pending", 3), ("failed", 2)):
        for _ in range(count):
            event_id = uuid7()
            await db_conn.execute(
                "INSERT INTO events (id, type, tenant_id, payload) "
                "VALUES ($1, 'tenant.created', $2, '{}')",
                event_id, tenant_id,
            )  # fmt: skip
            await db_conn.execute(
                "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, status, "
                "max_attempts) VALUES ($1, $2, $3, 'tenant.created', $4, 6)",
                uuid7(), webhook_id, event_id, status,
            )  # fmt: skip

    samples = await scrape(client)
    queue = "tenant_service_webhook_deliveries"
    assert value(samples, queue, status="pending") == 3
    assert value(samples, queue, status="failed") == 2
    assert (queue, frozenset({("status", "success")})) not in samples  # only ever grows
    assert value(samples, "tenant_service_database_up") == 1
    pool = "tenant_service_db_pool_connections"
    # DB_POOL_MAX_SIZE of the test settings, a gauge of its own rather than a state.
    assert value(samples, "tenant_service_db_pool_max_connections") == 12
    assert (pool, frozenset({("state", "max")})) not in samples
    assert value(samples, "tenant_service_webhook_dead_letters") == 2
    # db_conn holds one connection of this pool while the scrape runs.
    assert value(samples, pool, state="in_use") >= 1
    assert value(samples, pool, state="in_use") + value(samples, pool, state="idle") <= 12


async def test_rate_limit_refusals_are_counted(client: TestClient, admin: dict[str, str]) -> None:
    limited = as_key(await create_key(client, admin, rate_limit_max=1, rate_limit_window="1h"))
    assert (await client.get("/api/v1/tenants", headers=limited)).status == 200
    for _ in range(3):
        assert (await client.get("/api/v1/tenants", headers=limited)).status == 429
    samples = await scrape(client)
    name = "tenant_service_rate_limit_refusals_total"
    assert value(samples, name, route="/api/v1/tenants") == 3
    requests = "tenant_service_http_requests_total"
    assert value(samples, requests, method="GET", route="/api/v1/tenants", status="429") == 3


async def test_each_app_counts_its_own_requests(client: TestClient, aiohttp_client: Any) -> None:
    """Two apps in one process (as in these tests) keep separate registries."""
    other = await aiohttp_client(create_app(client.app[SETTINGS]))
    await other.get("/health")
    await other.get("/health")
    await client.get("/health")
    mine = await scrape(client)
    theirs = await scrape(other)
    requests = "tenant_service_http_requests_total"
    assert value(mine, requests, method="GET", route="/health", status="200") == 1
    assert value(theirs, requests, method="GET", route="/health", status="200") == 2


async def test_the_api_port_answers_404_without_the_token(
    client: TestClient, aiohttp_client: Any, db_url: str, tmp_path: Any
) -> None:
    not_found = {"error": {"code": "NOT_FOUND", "message": "no route for /metrics"}}
    hostile = {"Authorization": "Bearer caf\u00e9-\u2603"}  # non-ASCII: still 404, no 500
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, hostile):
        resp = await client.get("/metrics", headers=headers)
        body = await resp.json()
        body["error"].pop("request_id")
        assert (resp.status, body) == (404, not_found)
    # Without METRICS_TOKEN nobody gets them on this port, whatever they send.
    untokened = await aiohttp_client(create_app(Settings.from_env(base_env(db_url, tmp_path))))
    resp = await untokened.get("/metrics", headers=SCRAPER)
    assert resp.status == 404


async def test_the_metrics_listener_serves_them(client: TestClient, aiohttp_client: Any) -> None:
    await client.get("/health")
    settings = client.app[SETTINGS]
    listener = await aiohttp_client(metrics_app(client.app, settings))
    assert (await listener.get("/metrics")).status == 404  # METRICS_TOKEN is set: needed
    resp = await listener.get("/metrics", headers=SCRAPER)
    assert resp.status == 200
    assert 'route="/health"' in await resp.text()
    # The service's name, not aiohttp's default that announces the library's version.
    assert resp.headers["Server"] == "tenant-service"
    assert (await listener.get("/health")).status == 404  # nothing else is served there


async def test_a_scrape_counts_a_bounded_number_of_rows(client: TestClient, db_conn: Any) -> None:
    webhook_id = uuid7()
    await db_conn.execute(
        "INSERT INTO webhooks (id, url, events, encrypted_secret) "
        "VALUES ($1, 'https://example.com/h', '{tenant.created}', 'v1:00:00:00')",
        webhook_id,
    )
    await db_conn.execute(
        "INSERT INTO events (id, type, tenant_id, payload) "
        "SELECT gen_random_uuid(), 'tenant.created', gen_random_uuid(), '{}' "
        "FROM generate_series(1, 10100)"
    )
    await db_conn.execute(
        "INSERT INTO webhook_deliveries (id, webhook_id, event_id, event_type, status, "
        "max_attempts) SELECT gen_random_uuid(), $1, id, 'tenant.created', 'pending', 6 "
        "FROM events",
        webhook_id,
    )
    samples = await scrape(client)
    assert value(samples, "tenant_service_webhook_deliveries", status="pending") == 10_001


async def test_runtime_collectors_build_info_and_no_created_series(client: TestClient) -> None:
    import platform

    from service.observability.metrics import service_version

    resp = await client.get("/metrics", headers=SCRAPER)
    text = await resp.text()
    samples = await scrape(client)
    info = "tenant_service_build_info"
    labels = {"version": service_version(), "python": platform.python_version()}
    assert value(samples, info, **labels) == 1
    assert service_version() != "unknown"
    names = {name for name, _ in samples}
    for expected in (
        "process_resident_memory_bytes", "process_cpu_seconds_total", "python_info",
        "python_gc_collections_total",
    ):  # fmt: skip
        assert expected in names, expected
    assert "_created" not in text
    attempts = "tenant_service_webhook_delivery_attempts_total"
    for outcome in ("success", "failure", "dead_letter"):
        assert value(samples, attempts, outcome=outcome) == 0
        assert (attempts, frozenset({("outcome", outcome)})) in samples
    latency = "tenant_service_webhook_delivery_attempt_duration_seconds_count"
    assert value(samples, latency) == 0
