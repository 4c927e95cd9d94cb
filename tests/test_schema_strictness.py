"""The OpenAPI document is exactly as strict as the validation: each pattern that only
documents a check (durations, webhook secrets and URLs, encryption keys, NUL-free text)
accepts what the check accepts and refuses what it refuses, and integers written as 1.0
(integers to JSON Schema) are accepted."""

from __future__ import annotations

import base64
import re
from typing import Any

import msgspec
import pytest
from aiohttp.test_utils import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from service.base.durations import DURATION_PATTERN, InvalidDuration, parse_duration
from service.schemas.config import ENCRYPTION_KEY_PATTERN
from service.schemas.webhooks import URL_PATTERN
from service.settings.reader import decode_encryption_key
from service.webhooks.signing import (
    MAX_SECRET_LENGTH,
    MIN_SECRET_LENGTH,
    InvalidSecret,
    check_secret,
)

EXAMPLES = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def _duration_ok(text: str) -> bool:
    try:
        parse_duration(text)
    except InvalidDuration:
        return False
    return True


def _secret_ok(text: str) -> bool:
    try:
        check_secret(text)
    except InvalidSecret:
        return False
    return True


def _key_ok(text: str) -> bool:
    try:
        decode_encryption_key(text)
    except ValueError:
        return False
    return True


def _document_accepts(pattern: str, text: str) -> bool:
    # JSON Schema's `$` is ECMA-262's: the very end, never before a final newline.
    return re.search(pattern.replace("$", r"\Z"), text) is not None


DURATION_WORDS = st.sampled_from(["", " ", "s", " sec", "m", " MINUTES", "h", " hrs", "d", " day",
                                  "x", " weeks", "  s"])  # fmt: skip
DURATIONS = st.one_of(
    st.from_regex(DURATION_PATTERN, fullmatch=True),
    st.builds(lambda n, w: f"{n}{w}", st.integers(-5, 10**10), DURATION_WORDS),
    st.text(max_size=12),
)


@EXAMPLES
@given(DURATIONS)
def test_the_duration_pattern_is_the_parser(text: str) -> None:
    assert _document_accepts(DURATION_PATTERN, text) == _duration_ok(text), repr(text)


def test_durations_at_the_bounds() -> None:
    cases = [("86400", True), ("86401", False), ("1440 minutes", True), ("1441m", False),
             ("24h", True), ("25h", False), ("1 day", True), ("2d", False), ("0", False),
             ("000000001", True), ("0000000001", False), (" 30 SECONDS ", True)]  # fmt: skip
    for text, ok in cases:
        assert _duration_ok(text) is ok, text
        assert _document_accepts(DURATION_PATTERN, text) is ok, text


SECRETS = st.one_of(
    st.text(max_size=40),
    st.text(min_size=MAX_SECRET_LENGTH - 2, max_size=MAX_SECRET_LENGTH + 2),
)


@EXAMPLES
@given(SECRETS)
def test_the_secret_lengths_are_check_secret(text: str) -> None:
    documented = MIN_SECRET_LENGTH <= len(text) <= MAX_SECRET_LENGTH
    assert documented == _secret_ok(text), repr(text)


KEYS = st.one_of(
    st.builds(lambda b: base64.b64encode(b).decode(), st.binary(min_size=28, max_size=36)),
    st.from_regex(ENCRYPTION_KEY_PATTERN, fullmatch=True),
    st.text(max_size=50),
)


@EXAMPLES
@given(KEYS)
def test_the_encryption_key_pattern_is_the_decoder(text: str) -> None:
    assert _document_accepts(ENCRYPTION_KEY_PATTERN, text) == _key_ok(text), repr(text)


def test_the_url_pattern_refuses_what_the_guard_refuses_before_any_lookup() -> None:
    refused = ["http://example.com/", "https://user@example.com/", "https://example.com/#x",
               "https://exa mple.com/", "ftp://example.com", "https://", "example.com"]  # fmt: skip
    for url in refused:
        assert not _document_accepts(URL_PATTERN, url), url
    for url in ["https://hooks.example.com/in", "HTTPS://example.com", "https://a.b:8443/x?y=1"]:
        assert _document_accepts(URL_PATTERN, url), url


async def _schema(client: TestClient, name: str) -> dict[str, Any]:
    document = await (await client.get("/api/v1/openapi.json")).json()
    schema: dict[str, Any] = document["components"]["schemas"][name]
    return schema


async def test_the_document_states_the_refusals(client: TestClient) -> None:
    put = await _schema(client, "ConfigPut")
    assert put["properties"]["value"] == {"not": {"type": "null"}}
    create = await _schema(client, "TenantCreate")
    config = create["properties"]["config"]["anyOf"][0]
    assert config["additionalProperties"] == {"not": {"type": "null"}}
    assert create["properties"]["name"]["pattern"] == "^[^\\u0000]*$"
    rotate = await _schema(client, "RotateEncryptionKey")
    assert rotate["properties"]["old_key"]["pattern"] == ENCRYPTION_KEY_PATTERN
    key = await _schema(client, "ApiKeyCreate")
    window = key["properties"]["rate_limit_window"]["anyOf"][0]
    assert window["pattern"] == DURATION_PATTERN
    hook = await _schema(client, "WebhookCreate")
    assert hook["properties"]["url"]["pattern"] == URL_PATTERN
    secret = hook["properties"]["secret"]["anyOf"][0]
    assert (secret["type"], secret["minLength"], secret["maxLength"]) == ("string", 1, 1024)
    assert "pattern" not in secret
    batch = await _schema(client, "TenantBatchCreate")
    assert batch["properties"]["tenants"]["items"] == {"$ref": "#/components/schemas/TenantCreate"}
    document = await (await client.get("/api/v1/openapi.json")).json()
    revoke = document["paths"]["/api/v1/tenants/{id}/consent/{purpose}"]["delete"]
    purpose = next(p for p in revoke["parameters"] if p.get("name") == "purpose")
    assert purpose["schema"] == {"type": "string", "pattern": "^[a-z][a-z0-9_.-]{0,63}$",
                                 "maxLength": 64}  # fmt: skip
    purge = await _schema(client, "PurgeResult")
    assert purge["properties"]["purged"] == {"type": "boolean", "const": True}


async def test_an_integer_written_as_1_0_is_an_integer(
    client: TestClient, admin: dict[str, str]
) -> None:
    """JSON Schema counts 1.0 as an integer, so the service does too."""
    resp = await client.post(
        "/api/v1/api-keys",
        data=b'{"name": "float-int", "rate_limit_max": 10.0, "rate_limit_window": "1 min"}',
        headers={**admin, "Content-Type": "application/json"},
    )
    assert resp.status == 201, await resp.text()
    body = await resp.json()
    assert (body["rate_limit_max"], body["rate_limit_window"]) == (10, "1 min")
    resp = await client.post(
        "/api/v1/api-keys",
        data=b'{"name": "float-int", "rate_limit_max": 10.5}',
        headers={**admin, "Content-Type": "application/json"},
    )
    assert resp.status == 400
    assert (await resp.json())["error"]["details"] == [
        {"field": "rate_limit_max", "message": "Expected `int | null`, got `float`"}
    ]


def test_null_config_values_are_refused_as_documented() -> None:
    from service.schemas.config import ConfigPut

    with pytest.raises(msgspec.ValidationError, match="must not be null"):
        msgspec.json.decode(b'{"value": null}', type=ConfigPut)
