"""The table of options (service/settings/table.py): one declaration per option, read by
kind, documented in docs/operations.md, secrets kept out of the repr."""

from __future__ import annotations

import base64
import dataclasses
import re
import secrets
import typing
from pathlib import Path

import pytest

from service.settings.options import Settings
from service.settings.reader import EnvironmentReader
from service.settings.table import options_of

TABLE = options_of(Settings)
OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
# Set by `serve --workers N` for its workers, never by an operator's choice.
NOT_OPTIONS = {"PROMETHEUS_MULTIPROC_DIR"}
SCALAR_TYPES = {"integer": int, "number": float, "boolean": bool, "text": str, "path": Path}


def documented_variables() -> set[str]:
    text = OPERATIONS.read_text()
    section = text[
        text.index("## Configuration") : text.index("\n## ", text.index("## Configuration") + 1)
    ]
    first_cells = re.findall(r"^\| ([^|]+) \|", section, flags=re.MULTILINE)
    return {
        name
        for cell in first_cells
        for name in re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|\b[A-Z]{4,}\b", cell)
    }


def test_every_option_is_documented_and_every_documented_variable_is_an_option() -> None:
    declared = {option.env for option in TABLE.values()}
    documented = documented_variables()
    assert declared - documented == set(), "options missing from docs/operations.md"
    assert documented - declared - NOT_OPTIONS == set(), "documented but not declared"


def test_each_environment_name_is_declared_once() -> None:
    names = [option.env for option in TABLE.values()]
    assert len(names) == len(set(names))


def test_an_unset_variable_gives_the_fields_default() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(Settings)}
    for name, option in TABLE.items():
        if option.kind != "derived":
            reader = EnvironmentReader({})
            assert option.read(reader) == defaults[name], name
            assert reader.errors == []


def test_the_kind_agrees_with_the_fields_type() -> None:
    """An integer option on a float field (or the other way) would read "2.5" wrongly."""
    hints = typing.get_type_hints(Settings)
    defaults = {f.name: f.default for f in dataclasses.fields(Settings)}
    for name, option in TABLE.items():
        expected = SCALAR_TYPES.get("integer" if option.kind == "duration" else option.kind)
        if expected is not None:
            assert hints[name] is expected, name
            # exact types: a bool is an int too
            assert (
                isinstance(defaults[name], Path)
                if expected is Path
                else (type(defaults[name]) is expected)
            ), name


@pytest.mark.parametrize("production", [False, True])
def test_production_defaults(production: bool, tmp_path: Path) -> None:
    env = {"DATA_DIR": str(tmp_path)}
    if production:
        env |= {
            "SERVICE_ENV": "production",
            "JWT_SECRET": secrets.token_urlsafe(48),
            "SERVICE_API_KEY_HMAC_SECRET": secrets.token_urlsafe(48),
            "SERVICE_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        }
    s = Settings.from_env(env)
    assert s.api_key_environments == (("live",) if production else ("live", "test"))
    assert s.jwt_require_tenant_claim is production


def test_secrets_are_left_out_of_the_repr(tmp_path: Path) -> None:
    values = {
        "JWT_SECRET": secrets.token_urlsafe(48),
        "SERVICE_API_KEY_HMAC_SECRET": secrets.token_urlsafe(48),
        "SERVICE_ENCRYPTION_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
        "SERVICE_ENCRYPTION_KEY_PREVIOUS": base64.b64encode(secrets.token_bytes(32)).decode(),
        "METRICS_TOKEN": secrets.token_urlsafe(48),
        "DATABASE_URL": "postgresql://u:database-password@h/db",
        "DATABASE_LISTEN_URL": "postgresql://u:listen-password@h/db",
        "DATABASE_REPLICA_URLS": "postgresql://u:replica-password@r/db",
        "REDIS_URL": "redis://:redis-password@r:6379",
    }
    secret_names = {option.env for option in TABLE.values() if option.secret}
    assert secret_names == set(values)
    s = Settings.from_env({"DATA_DIR": str(tmp_path), **values})
    shown = repr(s)
    assert "port=8080" in shown
    for value in values.values():
        assert value not in shown
    assert "password" not in shown
    assert repr(s.encryption_key) not in shown
    assert repr(s.api_key_hmac_secret) not in shown
