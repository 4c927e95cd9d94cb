"""The command line beyond `serve`: --version, argument checks, one line for a database
it cannot reach, `migrate --status`, `api-keys list|revoke|rotate`, and .env files read
by python-dotenv."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

from service.cli import _read_dotenv, load_settings
from service.db.migrations import load_migrations
from service.db.pool import connect
from tests.conftest import HMAC_SECRET, JWT_SECRET
from tests.support.databases import create_database, drop_database
from tests.support.processes import KEY_PATTERN, free_port, run_cli, service_env

UNREACHABLE = re.compile(
    r"^tenant-service: cannot reach the database \(check DATABASE_URL and that PostgreSQL "
    r"runs\): .+$"
)


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


def test_version() -> None:
    result = run_cli("--version", env=service_env())
    assert (result.returncode, result.stdout) == (
        0,
        f"tenant-service {version('tenant-hierarchy-service')}\n",
    )


@pytest.mark.parametrize("port", ["99999", "0", "-1", "65536", "http"])
def test_an_out_of_range_port_is_refused_before_anything_starts(port: str) -> None:
    result = run_cli("serve", "--port", port, env=service_env())
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "tenant-service serve: error: argument --port: must be a number from 1 to 65535"
    )


@pytest.mark.parametrize(
    "args",
    [("migrate",), ("migrate", "--status"), ("api-keys", "list"), ("serve", "--port", "0")],
)
def test_an_unreachable_database_is_one_line_and_exit_1(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    args = tuple(str(free_port()) if a == "0" else a for a in args)
    dsn = f"postgresql://tenant:pw-not-shown@127.0.0.1:{free_port()}/nothing"
    result = run_cli(*args, env=service_env(DATABASE_URL=dsn, DATA_DIR=str(tmp_path)))
    assert result.returncode == 1, result.stderr
    last = result.stderr.splitlines()[-1]
    assert UNREACHABLE.match(last), result.stderr
    assert "Traceback" not in result.stderr
    assert "pw-not-shown" not in result.stderr + result.stdout


def test_a_refused_login_is_one_line_too(admin_dsn: str, tmp_path: Path) -> None:
    dsn = re.sub(r"//[^@/]*@", "//no_such_role:pw@", admin_dsn, count=1)
    if "@" not in dsn:
        dsn = dsn.replace("//", "//no_such_role:pw@", 1)
    result = run_cli("migrate", env=service_env(DATABASE_URL=dsn, DATA_DIR=str(tmp_path)))
    assert result.returncode == 1, result.stderr
    assert UNREACHABLE.match(result.stderr.splitlines()[-1]), result.stderr


@pytest.fixture
def empty_db(admin_dsn: str) -> Iterator[str]:
    dsn = create_database(admin_dsn, None)
    yield dsn
    drop_database(admin_dsn, dsn)


def test_migrate_status_lists_applied_and_pending(empty_db: str, cli_env: dict[str, str]) -> None:
    migrations = load_migrations()
    env = {**cli_env, "DATABASE_URL": empty_db}
    before = run_cli("migrate", "--status", env=env)
    assert before.returncode == 0, before.stderr
    assert before.stdout.splitlines() == [
        f"pending  {m.version:04d}_{m.name}" for m in migrations
    ] + [f"0 applied, {len(migrations)} pending"]

    assert run_cli("migrate", env=env).returncode == 0
    after = run_cli("migrate", "--status", env=env)
    assert after.returncode == 0, after.stderr
    lines = after.stdout.splitlines()
    assert lines[-1] == f"{len(migrations)} applied, 0 pending"
    for line, migration in zip(lines, migrations, strict=False):
        assert re.fullmatch(
            rf"applied  {migration.version:04d}_{migration.name}  \d{{4}}-\d\d-\d\dT[\d:.]+Z",
            line,
        ), line

    async def tamper() -> None:
        conn = await connect(empty_db)
        try:
            await conn.execute("UPDATE schema_migrations SET checksum = 'x' WHERE version = 1")
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) "
                "VALUES (9999, 'from_the_future', 'y')"
            )
        finally:
            await conn.close()

    asyncio.run(tamper())
    tampered = run_cli("migrate", "--status", env=env)
    assert tampered.returncode == 1
    lines = tampered.stdout.splitlines()
    assert lines[0].startswith(f"changed  0001_{migrations[0].name}  ")
    assert lines[-2].startswith("unknown  9999_from_the_future  ")


def test_api_keys_list_rotate_and_revoke(cli_env: dict[str, str]) -> None:
    made = run_cli(
        "api-keys", "create", "--name", "ops-cli", "--scopes", "read,write", "--json",
        env=cli_env,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)

    listed = run_cli("api-keys", "list", "--json", env=cli_env)
    assert listed.returncode == 0, listed.stderr
    keys = {k["id"]: k for k in json.loads(listed.stdout)}
    assert keys[created["id"]]["name"] == "ops-cli"
    assert "plaintext_key" not in keys[created["id"]]
    assert created["plaintext_key"] not in listed.stdout
    table = run_cli("api-keys", "list", env=cli_env)
    [row] = [line for line in table.stdout.splitlines() if line.startswith(created["id"])]
    assert row.split()[1:4] == [created["prefix"], "active", "read,write"]
    assert row.endswith("last_used=never  ops-cli")

    rotated = run_cli("api-keys", "rotate", created["id"], "--json", env=cli_env)
    assert rotated.returncode == 0, rotated.stderr
    new = json.loads(rotated.stdout)
    assert KEY_PATTERN.fullmatch(new["plaintext_key"])
    assert (new["name"], new["scopes"], new["rotated_from"]) == (
        "ops-cli", ["read", "write"], created["id"],
    )  # fmt: skip
    plain = run_cli("api-keys", "rotate", new["id"], "--grace-period", "3600", env=cli_env)
    assert plain.returncode == 0, plain.stderr
    assert len(KEY_PATTERN.findall(plain.stdout)) == 1
    assert "works for 3600 more seconds" in plain.stdout

    active = {
        k["id"] for k in json.loads(run_cli("api-keys", "list", "--json", env=cli_env).stdout)
    }
    assert created["id"] not in active
    everything = run_cli("api-keys", "list", "--include-revoked", "--json", env=cli_env)
    statuses = {k["id"]: k["status"] for k in json.loads(everything.stdout)}
    assert statuses[created["id"]] == "revoked"

    revoked = run_cli("api-keys", "revoke", new["id"], env=cli_env)
    assert (revoked.returncode, revoked.stdout) == (0, f"Revoked API key {new['id']}.\n")
    missing = "00000000-0000-7000-8000-000000000000"
    unknown = run_cli("api-keys", "revoke", missing, env=cli_env)
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines()[-1].startswith("tenant-service: ")
    assert "NOT_FOUND" in unknown.stderr
    again = run_cli("api-keys", "rotate", created["id"], env=cli_env)
    assert again.returncode == 1
    assert "Traceback" not in again.stderr
    bad = run_cli("api-keys", "rotate", created["id"], "--grace-period", "-5", env=cli_env)
    assert bad.returncode == 2


def test_dotenv_files_parse_as_python_dotenv_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# development settings\n"
        "export PORT=9123  # a comment after the value\n"
        "LOG_LEVEL='warning'\n"
        'REDIS_KEY_PREFIX="tsvc # not a comment:"\n'
        "SERVICE_REGIONS=eu, us\n"
        "\n"
        "   # indented comment\n"
        "EMPTY=\n"
    )
    assert _read_dotenv(env_file) == {
        "PORT": "9123",
        "LOG_LEVEL": "warning",
        "REDIS_KEY_PREFIX": "tsvc # not a comment:",
        "SERVICE_REGIONS": "eu, us",
        "EMPTY": "",
    }
    monkeypatch.chdir(tmp_path)
    for name in ("PORT", "LOG_LEVEL", "REDIS_KEY_PREFIX", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOG_LEVEL", "error")  # the real environment wins
    settings = load_settings()
    assert (settings.port, settings.log_level, settings.redis_key_prefix) == (
        9123, "error", "tsvc # not a comment:",
    )  # fmt: skip
