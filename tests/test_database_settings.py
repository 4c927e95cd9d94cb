"""The replica, PgBouncer and direct-connection settings (service/settings/database.py),
and the consistency token's form (service/db/consistency.py)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from service.db.consistency import InvalidToken, decode_token, encode_token, token_key
from service.db.pool import server_settings
from service.db.replicas import label_of
from service.settings.options import ConfigError, Settings


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"DATA_DIR": str(tmp_path), **env})


def test_defaults(tmp_path: Path) -> None:
    s = settings(tmp_path, DATABASE_URL="postgresql://u@h/db")
    assert s.database_replica_urls == ()
    assert (s.database_replica_max_lag_seconds, s.database_replica_check_seconds) == (5.0, 1.0)
    assert (s.database_pgbouncer, s.database_statement_cache_size) == (False, 1024)
    assert s.direct_database_url == "postgresql://u@h/db"
    assert "statement_timeout" in server_settings(s)


def test_replicas_pgbouncer_and_a_direct_url(tmp_path: Path) -> None:
    s = settings(
        tmp_path,
        DATABASE_URL="postgresql://u@bouncer:6432/db",
        DATABASE_LISTEN_URL="postgresql://u@h1,h2/db?target_session_attrs=read-write",
        DATABASE_REPLICA_URLS=" postgresql://u:pw@r1/db , postgres://u@r2:5433/db,",
        DATABASE_REPLICA_MAX_LAG_SECONDS="2.5",
        DATABASE_PGBOUNCER="true",
    )
    assert s.database_replica_urls == ("postgresql://u:pw@r1/db", "postgres://u@r2:5433/db")
    assert s.database_replica_max_lag_seconds == 2.5
    assert (s.database_pgbouncer, s.database_statement_cache_size) == (True, 0)
    assert s.direct_database_url == "postgresql://u@h1,h2/db?target_session_attrs=read-write"
    # PgBouncer refuses unknown startup parameters: only the application name is sent.
    assert server_settings(s) == {"application_name": "tenant-service"}
    # PgBouncer 1.21+ with max_prepared_statements may keep the statement cache.
    kept = settings(tmp_path, DATABASE_PGBOUNCER="true", DATABASE_STATEMENT_CACHE_SIZE="256")
    assert kept.database_statement_cache_size == 256


def test_bad_urls_are_refused_without_echoing_them(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        settings(
            tmp_path,
            DATABASE_REPLICA_URLS="postgresql://u@r1/db,mysql://u:secret@r2/db",
            DATABASE_LISTEN_URL="http://x",
            DATABASE_REPLICA_MAX_LAG_SECONDS="-1",
        )
    message = str(caught.value)
    assert "DATABASE_REPLICA_URLS entry 2 is not a postgresql:// URL" in message
    assert "DATABASE_LISTEN_URL is not a postgresql:// URL" in message
    assert "DATABASE_REPLICA_MAX_LAG_SECONDS must be between" in message
    assert "secret" not in message


def test_replica_labels_carry_no_credentials() -> None:
    assert label_of("postgresql://user:pw@db2.internal:5433/tenants") == "db2.internal:5433/tenants"
    assert label_of("postgresql://user@db3/tenants") == "db3:5432/tenants"


KEY = token_key(b"test-secret")


@pytest.mark.parametrize("lsn", [0, 1, 0x16B3748, 2**64 - 1])
def test_tokens_round_trip(lsn: int) -> None:
    token = encode_token(lsn, KEY)
    assert decode_token(token, KEY) == lsn
    assert token.replace("-", "").replace("_", "").isalnum()


def _untagged(version: int, lsn: int) -> str:
    raw = bytes([version]) + lsn.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x" * 60,
        "not base64!",
        "AAAA",
        encode_token(5, KEY)[:-2],
        # a far-future position: untagged in the current version, tagged with another
        # secret, or with its position changed under a genuine tag
        _untagged(1, 2**62),  # the first form (no tag)
        _untagged(2, 2**62),
        encode_token(2**62, token_key(b"another secret")),
        encode_token(5, KEY)[:2]
        + ("A" if encode_token(5, KEY)[2] != "A" else "B")
        + encode_token(5, KEY)[3:],
    ],
)
def test_malformed_and_forged_tokens_are_refused(text: str) -> None:
    with pytest.raises(InvalidToken):
        decode_token(text, KEY)
