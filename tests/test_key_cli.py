"""The two ways to get first credentials (docs/operations.md, "First keys") go through
the same issuing code as the API: `tenant-service api-keys create` and the development
key."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys

from aiohttp.test_utils import TestClient, TestServer

from service import bootstrap
from service.app import create_app
from service.bootstrap import bootstrap_admin_key, show_key_once
from service.http.appkeys import DATABASE, QUERIES
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.processes import REPO_ROOT


async def test_cli_creates_a_working_key(client, db_url, tmp_path, db_conn) -> None:
    env = {"PATH": os.environ.get("PATH", ""), **base_env(db_url, tmp_path)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "service", "api-keys", "create", "--name", "ops",
        "--scopes", "read,admin", "--test", "--json",
        cwd=REPO_ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, stderr
    created = json.loads(stdout.decode().strip().splitlines()[-1])
    plaintext = created["plaintext_key"]
    assert plaintext.startswith("sk_test_")
    assert created["scopes"] == ["admin", "read"]
    headers = {"X-API-Key": plaintext}
    resp = await client.get(f"/api/v1/api-keys/{created['id']}", headers=headers)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["name"] == "ops"
    entry = await db_conn.fetchrow(
        "SELECT actor_type, changes::text AS changes FROM audit_logs "
        "WHERE action = 'api_key.created' AND resource_id = $1",
        created["id"],
    )
    assert entry["actor_type"] == "system"
    assert plaintext not in entry["changes"]
    assert plaintext not in stderr.decode()


async def test_development_start_makes_one_admin_key(fresh_db_url, tmp_path) -> None:
    settings = Settings.from_env(base_env(fresh_db_url, tmp_path, RATE_LIMIT_MAX="100"))
    async with TestClient(TestServer(create_app(settings))) as client:
        app = client.app
        issued = await bootstrap_admin_key(app[DATABASE], settings, app[QUERIES])
        assert issued is not None
        assert issued.plaintext.startswith("sk_test_")
        resp = await client.get("/api/v1/api-keys", headers={"X-API-Key": issued.plaintext})
        body = await resp.json()
        assert resp.status == 200, body
        [key] = body["data"]
        assert (key["name"], key["scopes"]) == ("development admin", ["admin", "read", "write"])
        # Its own limit, out of reach of a person clicking through the console.
        assert (key["rate_limit_max"], key["rate_limit_window"]) == (6000, "1 minute")
        # A second start finds a key and makes none.
        assert await bootstrap_admin_key(app[DATABASE], settings, app[QUERIES]) is None


async def test_the_development_key_follows_a_higher_global_limit(fresh_db_url, tmp_path) -> None:
    """With RATE_LIMIT_MAX above 6,000 the key can still make keys of the default limit
    (the README's walkthrough): it is never below the global limit, nor refills slower."""
    env = base_env(fresh_db_url, tmp_path, RATE_LIMIT_MAX="20000", RATE_LIMIT_WINDOW="30 s")
    settings = Settings.from_env(env)
    async with TestClient(TestServer(create_app(settings))) as client:
        app = client.app
        issued = await bootstrap_admin_key(app[DATABASE], settings, app[QUERIES])
        assert issued is not None
        admin = {"X-API-Key": issued.plaintext}
        [key] = (await (await client.get("/api/v1/api-keys", headers=admin)).json())["data"]
        assert (key["rate_limit_max"], key["rate_limit_window"]) == (20000, "30 seconds")
        resp = await client.post("/api/v1/api-keys", json={"name": "walkthrough"}, headers=admin)
        assert resp.status == 201, await resp.text()


async def test_on_a_terminal_the_key_is_printed_once(
    fresh_db_url, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setattr(bootstrap, "on_terminal", lambda: True)
    settings = Settings.from_env(base_env(fresh_db_url, tmp_path))
    async with TestClient(TestServer(create_app(settings))) as client:
        app = client.app
        issued = await bootstrap_admin_key(app[DATABASE], settings, app[QUERIES])
        assert issued is not None
        show_key_once(issued, settings.data_dir, 8080)
        printed = capsys.readouterr().out
        assert [w for w in printed.split() if w.startswith("sk_test_")] == [issued.plaintext]
        assert "http://localhost:8080/console" in printed
    assert not (tmp_path / bootstrap.KEY_FILE).exists()


async def test_without_a_terminal_the_key_goes_to_a_file(fresh_db_url, tmp_path, capsys) -> None:
    # stdout is the log stream here (capsys is no terminal): the key never reaches it.
    settings = Settings.from_env(base_env(fresh_db_url, tmp_path))
    async with TestClient(TestServer(create_app(settings))) as client:
        app = client.app
        issued = await bootstrap_admin_key(app[DATABASE], settings, app[QUERIES])
        assert issued is not None
        show_key_once(issued, settings.data_dir, 8080)
        assert "sk_test_" not in capsys.readouterr().out
        path = tmp_path / bootstrap.KEY_FILE
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        key = path.read_text().strip()
        resp = await client.get("/api/v1/api-keys", headers={"X-API-Key": key})
        assert resp.status == 200
