"""The tenant-service command, run as real processes."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import HMAC_SECRET, JWT_SECRET
from tests.support.processes import (
    KEY_PATTERN,
    ServiceProcess,
    development_key,
    run_cli,
    service_env,
)


def http_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback only
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Not under pytest's tmp_path: pytest keeps that 0700 for root, and the embedded
    # server runs as its own system user, which must reach its data directory.
    folder = Path(tempfile.mkdtemp(prefix="tsvc-cli-"))
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def test_serve_on_embedded_postgres_prints_a_key_and_stops_cleanly(
    tmp_path: Path, data_dir: Path
) -> None:
    """What `make run` does: no DATABASE_URL, a fresh DATA_DIR, one command."""
    env = service_env(DATA_DIR=str(data_dir), LOG_LEVEL="info")
    service = ServiceProcess(env, tmp_path)
    try:
        service.wait_ready(timeout=90)
        status, body = http_get(f"{service.url}/health")
        assert (status, body) == (200, {"status": "ok"})
        assert http_get(f"{service.url}/ready")[0] == 200
        keys = [development_key(service.output(), data_dir)]
        status, body = http_get(f"{service.url}/api/v1/tenants", {"X-API-Key": keys[0]})
        assert (status, body) == (200, {"data": [], "next_cursor": None, "has_more": False})
        postmaster = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
        assert psutil.pid_exists(postmaster)
        # A command run beside it shares its database and leaves it running (and says so).
        made = run_cli(
            "api-keys", "create", "--name", "beside", "--json", env={**env, "LOG_LEVEL": "debug"}
        )
        assert made.returncode == 0, made.stderr
        assert "embedded postgresql stopped" not in made.stderr
        assert "embedded postgresql left running" in made.stderr
        assert psutil.pid_exists(postmaster)
        status, _ = http_get(f"{service.url}/api/v1/tenants", {"X-API-Key": keys[0]})
        assert status == 200
    finally:
        code = service.stop()
    assert code == 0, service.output()
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == "zombie"
    output = service.output()
    assert '"service stopped"' in output
    assert '"embedded postgresql stopped"' in output
    assert keys[0] not in output, "the key is in DATA_DIR, never logged"
    assert (data_dir / "secrets.json").exists()

    # A second start reuses the data and the secrets and prints no new key.
    again = ServiceProcess(env, tmp_path)
    try:
        again.wait_ready(timeout=90)
        status, _ = http_get(f"{again.url}/api/v1/tenants", {"X-API-Key": keys[0]})
        assert status == 200
        assert KEY_PATTERN.findall(again.output()) == []
        assert '"development admin key created' not in again.output()
    finally:
        assert again.stop() == 0


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path) -> dict[str, str]:
    return service_env(
        DATABASE_URL=db_url,
        DATA_DIR=str(tmp_path),
        JWT_SECRET=JWT_SECRET,
        SERVICE_API_KEY_HMAC_SECRET=HMAC_SECRET,
        SERVICE_ENCRYPTION_KEY=base64.b64encode(os.urandom(32)).decode(),
        LOG_LEVEL="warning",
    )


def test_migrate_applies_nothing_on_a_migrated_database(cli_env: dict[str, str]) -> None:
    result = run_cli("migrate", env={**cli_env, "LOG_LEVEL": "info"})
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(line["event"], line["count"]) for line in lines] == [("migrations applied", 0)]


def test_api_keys_create_prints_the_key_once_as_json(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    root = "01a20214-0000-7000-8000-000000000000"
    result = run_cli(
        "api-keys", "create", "--name", "ops", "--scopes", "read,write", "--test", "--json",
        env=cli_env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    key = json.loads(result.stdout)
    assert KEY_PATTERN.fullmatch(key["plaintext_key"])
    assert key["plaintext_key"].startswith("sk_test_")
    assert key["prefix"] == key["plaintext_key"][:12]
    assert (key["name"], key["scopes"], key["environment"]) == ("ops", ["read", "write"], "test")
    assert (key["tenant_id"], key["status"], key["role_id"]) == (None, "active", None)
    plain = run_cli("api-keys", "create", "--name", "plain", "--scopes", "read", env=cli_env)
    assert plain.returncode == 0
    assert len(KEY_PATTERN.findall(plain.stdout)) == 1
    bad = run_cli("api-keys", "create", "--name", "x", "--scopes", "read,root", env=cli_env)
    assert bad.returncode == 2
    assert "--scopes" in bad.stderr
    missing_tenant = run_cli("api-keys", "create", "--name", "x", "--tenant-id", root, env=cli_env)
    assert missing_tenant.returncode == 1
    assert missing_tenant.stderr.strip().splitlines()[-1] == (
        f"tenant-service: no tenant has the id or slug {root!r} (TENANT_NOT_FOUND)"
    )

    service = ServiceProcess(cli_env, tmp_path)
    try:
        service.wait_ready()
        status, _ = http_get(f"{service.url}/api/v1/tenants", {"X-API-Key": key["plaintext_key"]})
        assert status == 200
    finally:
        assert service.stop() == 0


def test_production_refuses_to_start_without_secrets(tmp_path: Path) -> None:
    result = run_cli(
        "serve", env=service_env(SERVICE_ENV="production", DATA_DIR=str(tmp_path)), timeout=30
    )
    assert result.returncode == 2
    for name in ("JWT_SECRET", "SERVICE_API_KEY_HMAC_SECRET", "SERVICE_ENCRYPTION_KEY"):
        assert f"{name} is missing" in result.stderr


def test_help_explains_the_commands() -> None:
    result = run_cli("--help", env=service_env())
    assert result.returncode == 0
    for word in ("serve", "migrate", "api-keys"):
        assert word in result.stdout
    result = run_cli("api-keys", "create", "--help", env=service_env())
    assert "--tenant-id" in result.stdout
    assert "--json" in result.stdout
