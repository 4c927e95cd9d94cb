"""`api-keys list|revoke|rotate` name keys and tenants as the list shows them: newest
first, the tenant by its slug, a key by its prefix as well as its id; revoking a revoked
key says so and changes nothing."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import HMAC_SECRET, JWT_SECRET
from tests.support.api import create_tenant
from tests.support.processes import run_cli, service_env


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


def _cli(env: dict[str, str], *args: str) -> str:
    result = run_cli(*args, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


async def test_keys_are_named_as_the_list_shows_them(
    client: TestClient, admin: dict[str, str], cli_env: dict[str, str]
) -> None:
    tenant = await create_tenant(client, admin, name="Acme")
    made = [
        json.loads(_cli(cli_env, "api-keys", "create", "--name", f"k{i}", "--tenant-id",
                        tenant["id"], "--json"))
        for i in range(3)
    ]  # fmt: skip

    # Newest first, the tenant by its slug.
    rows = _cli(cli_env, "api-keys", "list", "--tenant-id", tenant["slug"]).splitlines()
    assert [row.split()[0] for row in rows] == [k["id"] for k in reversed(made)]
    assert all(f"tenant={tenant['slug']}  " in row for row in rows), rows
    listed = json.loads(_cli(cli_env, "api-keys", "list", "--tenant-id", tenant["slug"], "--json"))
    assert [k["id"] for k in listed] == [k["id"] for k in reversed(made)]
    unknown = run_cli("api-keys", "list", "--tenant-id", "no_such_slug", env=cli_env)
    assert unknown.returncode == 1
    assert "TENANT_NOT_FOUND" in unknown.stderr

    # Revoke by prefix; a second revoke says it was already done.
    first = made[0]
    said = _cli(cli_env, "api-keys", "revoke", first["prefix"])
    assert said == f"Revoked API key {first['id']}.\n"
    again = _cli(cli_env, "api-keys", "revoke", first["id"])
    assert again.startswith(f"API key {first['id']} was already revoked at ")
    assert again.endswith("; nothing changed.\n")
    statuses = json.loads(_cli(cli_env, "api-keys", "list", "--include-revoked", "--json"))
    assert {k["id"]: k["status"] for k in statuses}[first["id"]] == "revoked"

    # Rotate by prefix too; a prefix that names nothing is one line and exit 1.
    rotated = _cli(cli_env, "api-keys", "rotate", made[1]["prefix"])
    assert rotated.startswith(f"Rotated API key {made[1]['id']} into ")
    missing = run_cli("api-keys", "revoke", "sk_test_zzzz", env=cli_env)
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines()[-1] == (
        "tenant-service: no API key has the id or prefix 'sk_test_zzzz' (API_KEY_NOT_FOUND)"
    )


async def test_create_takes_the_tenant_by_its_slug(
    client: TestClient, admin: dict[str, str], cli_env: dict[str, str]
) -> None:
    tenant = await create_tenant(client, admin, name="Globex")
    by_slug = json.loads(
        _cli(cli_env, "api-keys", "create", "--name", "s", "--tenant-id", tenant["slug"], "--json")
    )
    assert by_slug["tenant_id"] == tenant["id"]
    for unknown in ("no_such_slug", "01900000-0000-7000-8000-000000000000"):
        refused = run_cli("api-keys", "create", "--name", "x", "--tenant-id", unknown, env=cli_env)
        assert refused.returncode == 1
        assert refused.stderr.strip().splitlines()[-1] == (
            f"tenant-service: no tenant has the id or slug {unknown!r} (TENANT_NOT_FOUND)"
        )
