"""`tenant-service serve --workers 2`: two processes answer on one port, sharing the
embedded PostgreSQL the parent started; metrics add up over both; SIGTERM stops all."""

from __future__ import annotations

import http.client
import json
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import ServiceProcess, development_key, free_port, service_env

REQUESTS = 60


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Outside pytest's tmp_path (0700 for root): the embedded server runs as its own user.
    folder = Path(tempfile.mkdtemp(prefix="tsvc-workers-"))
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    # A new connection each time, so the kernel picks a listener each time.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Connection": "close", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def wait_for_workers(service: ServiceProcess, count: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert service.proc.poll() is None, service.output()
        started = service.output().count('"service started"')
        if started >= count:
            return psutil.Process(service.proc.pid).children()
        time.sleep(0.1)
    raise AssertionError(f"workers did not start:\n{service.output()[-4000:]}")


def test_two_workers_answer_on_one_port_and_stop_on_sigterm(tmp_path: Path, data_dir: Path) -> None:
    metrics_port = free_port()
    env = service_env(
        DATA_DIR=str(data_dir), LOG_LEVEL="info", RATE_LIMIT_MAX="100000",
        METRICS_PORT=str(metrics_port),
    )  # fmt: skip
    service = ServiceProcess(env, tmp_path, "--workers", "2")
    try:
        service.wait_ready(timeout=90)
        workers = wait_for_workers(service, 2)
        assert len(workers) == 2
        worker_pids = {w.pid for w in workers}
        keys = [development_key(service.output(), data_dir)]  # one for both workers

        answered_by: dict[str, int] = {}
        for i in range(REQUESTS):
            headers = {"X-API-Key": keys[0], "X-Request-ID": f"workers-test-{i}"}
            status, _ = get(service.port, "/api/v1/tenants", headers)
            assert status == 200
        time.sleep(0.2)  # let both workers flush their log lines
        for line in service.output().splitlines():
            if line.startswith("{") and '"request"' in line:
                entry = json.loads(line)
                if str(entry.get("request_id", "")).startswith("workers-test-"):
                    answered_by[entry["request_id"]] = entry["pid"]
        assert len(answered_by) == REQUESTS
        assert set(answered_by.values()) == worker_pids, "both workers answered"

        # Metrics are not on the API port (no METRICS_TOKEN) but on METRICS_PORT, where
        # whichever worker answers the scrape reports the requests of both.
        assert get(service.port, "/metrics")[0] == 404
        status, body = get(metrics_port, "/metrics")
        assert status == 200
        total = 0.0
        for family in text_string_to_metric_families(body.decode()):
            for sample in family.samples:
                if (
                    sample.name == "tenant_service_http_requests_total"
                    and sample.labels.get("route") == "/api/v1/tenants"
                ):
                    total += sample.value
        assert total == REQUESTS
        # Runtime figures cannot be summed through the shared directory: they are the
        # answering worker's, labelled with its pid; build_info is the same in each.
        text = body.decode()
        assert "_created" not in text
        families = {f.name: f for f in text_string_to_metric_families(text)}
        (memory,) = families["process_resident_memory_bytes"].samples
        assert int(memory.labels["pid"]) in worker_pids
        assert {s.labels["pid"] for s in families["python_gc_collections"].samples} == {
            memory.labels["pid"]
        }
        (info,) = families["tenant_service_build_info"].samples
        assert set(info.labels) == {"version", "python"}
        outcomes = {
            s.labels["outcome"]: s.value
            for s in families["tenant_service_webhook_delivery_attempts"].samples
        }
        assert outcomes == {"success": 0, "failure": 0, "dead_letter": 0}
        capacity = families["tenant_service_db_pool_max_connections"].samples
        assert [s.value for s in capacity] == [2 * int(env.get("DB_POOL_MAX_SIZE", "10"))]

        postmaster = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    finally:
        code = service.stop()
    assert code == 0, service.output()[-4000:]
    for worker in workers:
        assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == "zombie"
    output = service.output()
    assert output.count('"service stopping"') == 2
    assert '"workers stopped"' in output
    assert '"embedded postgresql stopped"' in output
    assert keys[0] not in output.replace(f"      {keys[0]}", ""), "the key is printed, never logged"
