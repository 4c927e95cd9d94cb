"""A first start as a new user meets it: a taken port is one clear line and a non-zero
exit (no traceback, no development key spent), the key is made and shown only once the
service listens, and the banner names the port the service really listens on."""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from service.server import PortUnavailable, serve
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.processes import KEY_CREATED, ServiceProcess, development_key, run_cli


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


async def _key_count(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        count: int = await conn.fetchval("SELECT count(*) FROM api_keys")
        return count
    finally:
        await conn.close()


async def test_a_taken_port_is_one_line_and_spends_no_key(
    fresh_db_url: str, tmp_path: Path, taken_port: int
) -> None:
    env = {"PATH": "/usr/bin:/bin", **base_env(fresh_db_url, tmp_path, LOG_LEVEL="info")}
    result = run_cli("serve", "--host", "127.0.0.1", "--port", str(taken_port), env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"tenant-service: cannot listen on 127.0.0.1:{taken_port}: the port is already in use "
        "(another process listens on it); choose another port with PORT=<port> or --port "
        "<port>\n"
    )
    # The same through PORT, the way `make run` is told.
    result = run_cli("serve", env={**env, "HOST": "127.0.0.1", "PORT": str(taken_port)})
    assert (result.returncode, result.stderr.count("\n")) == (1, 1)
    assert "Traceback" not in result.stderr
    assert await _key_count(fresh_db_url) == 0


def test_a_taken_port_writes_nothing(fresh_db_url: str, tmp_path: Path, taken_port: int) -> None:
    """Without secrets in the environment a start generates them into DATA_DIR; a start
    that cannot listen leaves no file behind (the README says nothing is created)."""
    data_dir = tmp_path / "data"
    env = {
        k: v
        for k, v in base_env(fresh_db_url, data_dir).items()
        if k not in ("JWT_SECRET", "SERVICE_API_KEY_HMAC_SECRET", "SERVICE_ENCRYPTION_KEY")
    }
    env["PATH"] = "/usr/bin:/bin"
    result = run_cli("serve", "--host", "127.0.0.1", "--port", str(taken_port), env=env)
    assert (result.returncode, result.stderr.count("\n")) == (1, 1), result.stderr
    assert "already in use" in result.stderr
    assert not data_dir.exists()


def test_serve_binds_before_anything_else(fresh_db_url: str, tmp_path: Path, taken_port) -> None:
    """Past the early check (another process may take the port in between), serve()
    itself refuses before migrations, the pool or the development key."""
    settings = Settings.from_env(
        base_env(fresh_db_url, tmp_path, HOST="127.0.0.1", PORT=str(taken_port))
    )
    with pytest.raises(PortUnavailable, match="already in use"):
        serve(settings)


def test_the_key_is_shown_once_listening_with_the_real_port(
    fresh_db_url: str, tmp_path: Path
) -> None:
    env = {"PATH": "/usr/bin:/bin", **base_env(fresh_db_url, tmp_path, LOG_LEVEL="info")}
    service = ServiceProcess(env, tmp_path, port_in_env=True)
    try:
        service.wait_ready()
        # stdout is not a terminal: the key is in DATA_DIR (written before the first
        # answer), only its path in the log. The banner with the port is for a terminal
        # (tests/test_key_cli.py shows it).
        output = service.output()
        key = development_key(output, tmp_path)
        assert ":8080" not in output
        started = output.index('"service started"')
        assert started < output.index(KEY_CREATED), "the key is made once the service listens"
        [line] = [json.loads(x) for x in output.splitlines() if '"service started"' in x]
        assert line["port"] == service.port
        url = f"{service.url}/api/v1/tenants"
        request = urllib.request.Request(url, headers={"X-API-Key": key})  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as resp:  # noqa: S310 - loopback
            assert resp.status == 200
    finally:
        assert service.stop() == 0, service.output()
