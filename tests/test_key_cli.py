"""The two ways to get first credentials (DESIGN.md section 5) go through the same
issuing code as the API: `tenant-service api-keys create` and the development key."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from aiohttp.test_utils import TestClient, TestServer

from service.app import create_app
from service.config import Settings
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


async def test_development_start_prints_one_admin_key(fresh_db_url, tmp_path, capsys) -> None:
    settings = Settings.from_env(base_env(fresh_db_url, tmp_path))
    async with TestClient(TestServer(create_app(settings, bootstrap_key=True))) as client:
        printed = capsys.readouterr().out
        keys = [w for w in printed.split() if w.startswith("sk_test_")]
        assert len(keys) == 1
        resp = await client.get("/api/v1/api-keys", headers={"X-API-Key": keys[0]})
        body = await resp.json()
        assert resp.status == 200, body
        assert [k["scopes"] for k in body["data"]] == [["admin", "read", "write"]]
    # A second start finds a key and prints none.
    async with TestClient(TestServer(create_app(settings, bootstrap_key=True))):
        assert "sk_test_" not in capsys.readouterr().out
