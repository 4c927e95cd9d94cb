"""Issue 16, items 9 and 10: production refuses guessable secrets (saying how to make a
good one) and accepts only live keys unless API_KEY_ENVIRONMENTS says otherwise."""

from __future__ import annotations

import base64
import os
import random
import secrets
from pathlib import Path
from typing import Any

import pytest

from service.app import create_app
from service.settings.options import ConfigError, Settings
from service.settings.secret_strength import weakness
from tests.conftest import base_env
from tests.support.keys import make_key


def strong_env() -> dict[str, str]:
    return {
        "SERVICE_ENV": "production",
        "JWT_SECRET": secrets.token_urlsafe(48),
        "SERVICE_API_KEY_HMAC_SECRET": secrets.token_hex(32),
        "SERVICE_ENCRYPTION_KEY": base64.b64encode(os.urandom(32)).decode(),
    }


@pytest.mark.parametrize(
    "secret",
    [
        "changemechangemechangemechangeme12",
        "changemechangemechangemechangeme",
        "a" * 64,
        "abababababababababababababababababab",
        "0123456789abcdefghijklmnopqrstuvwxyz",
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz",
        "xxxxxxxx0123456789abcdefghijklmnopqrstuvwxyz",
        "password-password-password-password!",
        "secretsecretsecretsecret" + "2024" * 4,
        "aAbBcCdDaAbBcCdDaAbBcCdDaAbBcCdD",
        "1111111122222222333333334444444455555555",
    ],
)
def test_guessable_secrets_are_weak(secret: str) -> None:
    assert weakness(secret.encode()) is not None, secret


# Seeded draws of the forms `secrets` makes: fresh draws made this test fail about once
# in 500 runs (one token_hex(16) in 10,000 has fewer than 10 distinct characters).
_DRAWS = random.Random(20261126)


@pytest.mark.parametrize(
    "secret",
    [
        *(base64.urlsafe_b64encode(_DRAWS.randbytes(48)).decode() for _ in range(20)),
        *(base64.urlsafe_b64encode(_DRAWS.randbytes(32)).decode() for _ in range(20)),
        *(_DRAWS.randbytes(32).hex() for _ in range(20)),
        *(_DRAWS.randbytes(16).hex() for _ in range(20)),
        *(base64.b64encode(_DRAWS.randbytes(32)).decode() for _ in range(20)),
    ],
)
def test_random_secrets_are_strong(secret: str) -> None:
    assert weakness(secret.encode()) is None, secret


def test_production_refuses_a_repeated_pattern_and_says_how_to_make_a_good_one(
    tmp_path: Path,
) -> None:
    env = {**strong_env(), "JWT_SECRET": "changemechangemechangemechangeme12"}
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({**env, "DATA_DIR": str(tmp_path)})
    message = str(caught.value)
    assert "JWT_SECRET is weak" in message
    assert "changeme" not in message  # the secret itself is never echoed
    assert "python -c 'import secrets; print(secrets.token_urlsafe(48))'" in message


def test_production_refuses_a_patterned_encryption_key(tmp_path: Path) -> None:
    env = {**strong_env(), "SERVICE_ENCRYPTION_KEY": base64.b64encode(bytes(range(32))).decode()}
    with pytest.raises(ConfigError, match="SERVICE_ENCRYPTION_KEY is weak"):
        Settings.from_env({**env, "DATA_DIR": str(tmp_path)})


def test_production_accepts_random_secrets() -> None:
    assert Settings.from_env(strong_env()).is_production


def test_production_accepts_live_keys_only_by_default() -> None:
    assert Settings.from_env(strong_env()).api_key_environments == ("live",)
    both = Settings.from_env({**strong_env(), "API_KEY_ENVIRONMENTS": "live,test"})
    assert both.api_key_environments == ("live", "test")


def test_development_accepts_both_environments_by_default(tmp_path: Path) -> None:
    assert Settings.from_env({"DATA_DIR": str(tmp_path)}).api_key_environments == (
        "live",
        "test",
    )


async def test_a_test_key_is_refused_by_a_production_service(
    aiohttp_client: Any, db_url: str, tmp_path: Path
) -> None:
    env = base_env(db_url, tmp_path, **strong_env())
    client = await aiohttp_client(create_app(Settings.from_env(env)))
    live = await make_key(client.app, environment="live")
    test = await make_key(client.app, environment="test")
    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": live.plaintext})
    assert resp.status == 200
    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": test.plaintext})
    body = await resp.json()
    assert resp.status == 401
    assert body["error"]["code"] == "INVALID_CREDENTIALS"
