"""Settings from the environment: defaults, validation, development and production secrets."""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path

import pytest

from service.base.durations import InvalidDuration, parse_duration
from service.settings.options import ConfigError, Settings

STRONG = {
    "JWT_SECRET": secrets.token_urlsafe(48),
    "SERVICE_API_KEY_HMAC_SECRET": secrets.token_urlsafe(48),
    "SERVICE_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
}


def test_defaults_follow_design(tmp_path: Path) -> None:
    s = Settings.from_env({"DATA_DIR": str(tmp_path)})
    assert (s.port, s.environment, s.database_url) == (8080, "development", None)
    assert (s.rate_limit_max, s.rate_limit_window_seconds) == (100, 60)
    assert (s.webhook_max_attempts, s.webhook_retry_base_seconds) == (6, 10.0)
    assert (s.webhook_retry_max_seconds, s.webhook_timeout_seconds) == (3600.0, 10.0)
    assert (s.max_body_bytes, s.max_tenant_depth) == (1_048_576, 32)
    assert (s.regions, s.default_region) == (("default",), "default")
    assert (s.audit_log_retention_days, s.delivery_retention_days) == (365, 30)
    assert (s.consent_retention_days, s.archived_tenant_retention_days) == (730, 0)
    assert s.webhook_allow_http is False


def test_development_generates_secrets_once_and_reuses_them(tmp_path: Path) -> None:
    first = Settings.from_env({"DATA_DIR": str(tmp_path)})
    second = Settings.from_env({"DATA_DIR": str(tmp_path)})
    assert first.jwt_secret == second.jwt_secret
    assert first.api_key_hmac_secret == second.api_key_hmac_secret
    assert first.encryption_key == second.encryption_key
    assert len(first.encryption_key) == 32
    assert set(first.generated_secrets) == {
        "JWT_SECRET",
        "SERVICE_API_KEY_HMAC_SECRET",
        "SERVICE_ENCRYPTION_KEY",
    }
    stored = tmp_path / "secrets.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert set(json.loads(stored.read_text())) == {
        "jwt_secret",
        "api_key_hmac_secret",
        "encryption_key",
    }


def test_environment_secrets_win_over_generated_ones(tmp_path: Path) -> None:
    s = Settings.from_env({"DATA_DIR": str(tmp_path), **STRONG})
    assert s.jwt_secret == STRONG["JWT_SECRET"]
    assert s.generated_secrets == ()
    assert not (tmp_path / "secrets.json").exists()


def test_production_refuses_to_start_without_secrets_naming_each(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"DATA_DIR": str(tmp_path), "SERVICE_ENV": "production"})
    message = str(caught.value)
    for name in ("JWT_SECRET", "SERVICE_API_KEY_HMAC_SECRET", "SERVICE_ENCRYPTION_KEY"):
        assert f"{name} is missing" in message
    assert not (tmp_path / "secrets.json").exists()


def test_production_refuses_weak_secrets(tmp_path: Path) -> None:
    env = {
        **STRONG,
        "SERVICE_ENV": "production",
        "JWT_SECRET": "short",
        "SERVICE_API_KEY_HMAC_SECRET": "a" * 64,
        "SERVICE_ENCRYPTION_KEY": base64.b64encode(b"\x00" * 32).decode(),
    }
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(env)
    message = str(caught.value)
    assert "JWT_SECRET is weak" in message
    assert "SERVICE_API_KEY_HMAC_SECRET is weak" in message
    assert "SERVICE_ENCRYPTION_KEY is weak" in message


def test_production_starts_with_strong_secrets() -> None:
    s = Settings.from_env({**STRONG, "SERVICE_ENV": "production"})
    assert s.is_production
    assert s.generated_secrets == ()


def test_invalid_values_are_all_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(
            {
                "DATA_DIR": str(tmp_path),
                "PORT": "http",
                "RATE_LIMIT_WINDOW": "forever",
                "WEBHOOK_ALLOW_HTTP": "perhaps",
                "WEBHOOK_ALLOWED_PRIVATE_CIDRS": "10.0.0.0/8,nonsense",
                "SERVICE_REGIONS": "eu,us",
                "DEFAULT_REGION": "ap",
            }
        )
    message = str(caught.value)
    for fragment in (
        "PORT",
        "RATE_LIMIT_WINDOW",
        "WEBHOOK_ALLOW_HTTP",
        "nonsense",
        "DEFAULT_REGION",
    ):
        assert fragment in message


def test_lists_and_regions_parse(tmp_path: Path) -> None:
    s = Settings.from_env(
        {
            "DATA_DIR": str(tmp_path),
            "SERVICE_REGIONS": "eu-west, us-east",
            "WEBHOOK_ALLOWED_PRIVATE_CIDRS": "127.0.0.1/32, ::1/128",
            "RATE_LIMIT_WINDOW": "2 hours",
        }
    )
    assert s.regions == ("eu-west", "us-east")
    assert s.default_region == "eu-west"
    assert [str(n) for n in s.webhook_allowed_private_cidrs] == ["127.0.0.1/32", "::1/128"]
    assert s.rate_limit_window_seconds == 7200


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90),
        ("30s", 30),
        ("30 seconds", 30),
        ("1 minute", 60),
        ("5min", 300),
        ("2 hours", 7200),
        ("1h", 3600),
        ("1 day", 86400),
        (" 10 SEC ", 10),
    ],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "text", ["", "0", "0s", "2 days", "1 fortnight", "-5", "1.5h", "h", "1  h"]
)
def test_invalid_durations(text: str) -> None:
    with pytest.raises(InvalidDuration):
        parse_duration(text)
