"""Issue 16, item 3: anonymous or garbage credentials never lock out a valid key. Garbage
is refused offline and counts only against the address's anonymous budget; failed
lookups of well-formed keys count against its lookup budget; a valid key is never refused
by either. TRUSTED_PROXIES makes the address the client's, from X-Forwarded-For."""

from __future__ import annotations

import pytest

from service.auth.keys import generate_key
from service.http.appkeys import REPOSITORIES
from tests.support.access import as_key, create_key, error_code
from tests.support.keys import bearer


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"RATE_LIMIT_MAX": "4", "RATE_LIMIT_WINDOW": "1 hour"}


@pytest.fixture
def lookups(client, monkeypatch) -> list[bytes]:
    """Every key lookup authentication makes in the database."""
    repo = client.app[REPOSITORIES].api_keys
    seen: list[bytes] = []
    original = repo.get_api_key_for_auth

    async def counting(conn, key_hash):
        seen.append(key_hash)
        return await original(conn, key_hash)

    monkeypatch.setattr(repo, "get_api_key_for_auth", counting)
    return seen


GARBAGE = [
    {},
    {"X-API-Key": "sk_live_not-a-key"},
    {"X-API-Key": generate_key("live").plaintext[:-1] + "!"},  # checksum fails
    bearer("not.a.jwt"),
]


async def outcome(client, headers: dict[str, str], **extra: str) -> tuple[int, str | None]:
    resp = await client.get("/api/v1/tenants", headers={**headers, **extra})
    body = await resp.json()
    return resp.status, error_code(body) if resp.status != 200 else None


async def test_garbage_floods_never_lock_out_a_valid_key(client, admin, lookups) -> None:
    fresh = as_key(await create_key(client, admin))  # never used: not cached yet
    lookups.clear()
    for _ in range(5):
        for headers in GARBAGE:
            assert (await outcome(client, headers))[0] in (401, 429)
    assert lookups == []  # garbage costs no database work
    assert await outcome(client, fresh) == (200, None)
    assert len(lookups) == 1
    # Garbage did not spend the lookup budget: unknown well-formed keys still get 401.
    for _ in range(4):
        unknown = {"X-API-Key": generate_key("live").plaintext}
        assert await outcome(client, unknown) == (401, "INVALID_CREDENTIALS")


async def test_failed_lookups_are_throttled_but_a_valid_key_still_passes(
    client, admin, lookups
) -> None:
    fresh = [as_key(await create_key(client, admin)) for _ in range(2)]
    for _ in range(4):
        unknown = {"X-API-Key": generate_key("live").plaintext}
        assert await outcome(client, unknown) == (401, "INVALID_CREDENTIALS")
    for _ in range(3):
        unknown = {"X-API-Key": generate_key("live").plaintext}
        assert await outcome(client, unknown) == (429, "RATE_LIMITED")
    # The address is over its lookup budget; a valid key it has not used before passes.
    for headers in fresh:
        assert await outcome(client, headers) == (200, None)


async def test_without_trusted_proxies_forwarded_for_is_ignored(client) -> None:
    for n in range(4):
        unknown = {"X-API-Key": generate_key("live").plaintext}
        assert (await outcome(client, unknown, **{"X-Forwarded-For": f"198.51.100.{n}"}))[0] == 401
    unknown = {"X-API-Key": generate_key("live").plaintext}
    spoofed = {"X-Forwarded-For": "198.51.100.99"}
    assert await outcome(client, unknown, **spoofed) == (429, "RATE_LIMITED")


@pytest.mark.parametrize(
    "settings_env",
    [{"RATE_LIMIT_MAX": "4", "RATE_LIMIT_WINDOW": "1 hour", "TRUSTED_PROXIES": "127.0.0.0/8"}],
)
async def test_trusted_proxies_give_each_client_its_own_budget(client) -> None:
    def unknown() -> dict[str, str]:
        return {"X-API-Key": generate_key("live").plaintext}

    # The right-most untrusted address is the client; what it claims further left is not.
    for spoof in ("10.0.0.1", "10.0.0.2", "not an address", "10.0.0.4"):
        via = {"X-Forwarded-For": f"{spoof}, 203.0.113.7, 127.0.0.1"}
        assert (await outcome(client, unknown(), **via))[0] == 401
    blocked = {"X-Forwarded-For": "203.0.113.7"}
    assert await outcome(client, unknown(), **blocked) == (429, "RATE_LIMITED")
    # Another client behind the same proxy has a budget of its own.
    other = {"X-Forwarded-For": "203.0.113.8"}
    assert await outcome(client, unknown(), **other) == (401, "INVALID_CREDENTIALS")
