"""`tenant-service --help` and each subcommand's help explain themselves."""

from __future__ import annotations

import pytest

from tests.support.processes import run_cli, service_env


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((), ("serve", "migrate", "api-keys", "DATABASE_URL", "docs/operations.md")),
        (("serve",), ("--workers", "SO_REUSEPORT", "SIGTERM", "SHUTDOWN_TIMEOUT_SECONDS",
                      "/metrics", "openapi.json", "--port", "--host")),
        (("migrate",), ("advisory lock", "checksum", "--status", "pending")),
        (("api-keys",), ("create", "list", "revoke", "rotate", "SERVICE_API_KEY_HMAC_SECRET")),
        (("api-keys", "list"), ("--tenant-id", "--include-revoked", "--json")),
        (("api-keys", "revoke"), ("KEY", "prefix", "DELETE /api/v1/api-keys/{id}")),
        (("api-keys", "rotate"), ("KEY", "prefix", "--grace-period", "--json", "print it once")),
        (("api-keys", "create"), ("--name", "--scopes", "--tenant-id", "--test", "--json",
                                  "only its HMAC")),
    ],
)  # fmt: skip
def test_help_explains_each_command(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    result = run_cli(*args, "--help", env=service_env())
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # argparse wraps lines
    for word in words:
        assert word in text, (args, word)
    assert "--worker-of" not in text, "the internal worker flag stays out of the help"


def test_workers_must_be_a_sensible_number() -> None:
    result = run_cli("serve", "--workers", "0", env=service_env())
    assert result.returncode == 2
    assert "between 1 and 64" in result.stderr
