"""No key gives itself or another key a later expiry, a higher rate limit or wider scopes
than its own (issue 16, item 4): create, patch, rotate and role assignment."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import JWT_SECRET
from tests.support.access import as_key, call, create_key, create_role, error_code
from tests.support.keys import bearer, make_key, make_token


def _at(days: float) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).isoformat().replace("+00:00", "Z")


def _refusal(field: str) -> tuple[int, str, list[str]]:
    return 403, "EXCEEDS_CALLER_LIMITS", [field]


def _seen(status: int, body: dict) -> tuple[int, str, list[str]]:
    details = body["error"].get("details") or []
    return status, error_code(body), [d["field"] for d in details]


async def test_an_expiring_key_cannot_outlive_itself(client, admin) -> None:
    issued = await make_key(client.app, expires_at=datetime.now(UTC) + timedelta(days=1))
    mine = {"X-API-Key": issued.plaintext}
    own = f"/api/v1/api-keys/{issued.key.id}"
    # Remove or extend its own expiry.
    for body in ({"expires_at": None}, {"expires_at": _at(30)}):
        status, data = await call(client, "PATCH", own, mine, body)
        assert _seen(status, data) == _refusal("expires_at"), body
    # Create keys that never expire or expire later.
    for body in ({"name": "forever", "scopes": ["admin", "read"]},
                 {"name": "later", "expires_at": _at(2)}):  # fmt: skip
        status, data = await call(client, "POST", "/api/v1/api-keys", mine, body)
        assert _seen(status, data) == _refusal("expires_at"), body
    # Change, rotate or re-role a key that never expires (it would stay stronger).
    permanent = await create_key(client, admin, scopes=["read"])
    role = await create_role(client, admin, scopes=["read", "write", "admin"])
    for method, path, body in (
        ("PATCH", f"/api/v1/api-keys/{permanent['id']}", {"scopes": ["read", "admin"]}),
        ("POST", f"/api/v1/api-keys/{permanent['id']}/rotate", None),
        ("PUT", f"/api/v1/api-keys/{permanent['id']}/role", {"role_id": role["id"]}),
    ):
        status, data = await call(client, method, path, mine, body)
        assert _seen(status, data) == _refusal("expires_at"), path
    # Editing a role held by a key that never expires would reach that key too.
    held = await create_role(client, admin, scopes=["read"])
    await call(client, "PUT", f"/api/v1/api-keys/{permanent['id']}/role", admin,
               {"role_id": held["id"]})  # fmt: skip
    status, data = await call(client, "PATCH", f"/api/v1/roles/{held['id']}", mine,
                              {"scopes": ["read", "write", "admin"]})  # fmt: skip
    assert _seen(status, data) == _refusal("expires_at")

    # Within its limits it may do all of these.
    sooner = _at(0.5)
    status, data = await call(client, "POST", "/api/v1/api-keys", mine,
                              {"name": "sooner", "expires_at": sooner})  # fmt: skip
    assert status == 201, data
    status, data = await call(client, "PATCH", own, mine, {"expires_at": sooner})
    assert status == 200, data
    # A key that expires no later than the caller may be changed.
    status, data = await call(client, "PATCH", f"/api/v1/api-keys/{permanent['id']}", mine,
                              {"expires_at": _at(0.25)})  # fmt: skip
    assert status == 200, data


async def test_a_throttled_key_cannot_raise_limits(client, admin) -> None:
    issued = await make_key(
        client.app, rate_limit_max=50, rate_limit_window="1 minute", rate_limit_window_seconds=60
    )
    mine = {"X-API-Key": issued.plaintext}
    own = f"/api/v1/api-keys/{issued.key.id}"
    for body, field in (
        ({"rate_limit_max": 5000}, "rate_limit_max"),
        ({"rate_limit_max": None}, "rate_limit_max"),  # the global default is higher
        ({"rate_limit_window": "1 second"}, "rate_limit_window"),  # same burst, faster refill
    ):
        status, data = await call(client, "PATCH", own, mine, body)
        assert _seen(status, data) == _refusal(field), body
    status, data = await call(client, "POST", "/api/v1/api-keys", mine, {"name": "fast"})
    assert _seen(status, data) == _refusal("rate_limit_max")
    status, data = await call(client, "POST", "/api/v1/api-keys", mine,
                              {"name": "burst", "rate_limit_max": 51,
                               "rate_limit_window": "1 hour"})  # fmt: skip
    assert _seen(status, data) == _refusal("rate_limit_max")
    # Equal or lower is fine.
    status, data = await call(client, "POST", "/api/v1/api-keys", mine,
                              {"name": "slow", "rate_limit_max": 50,
                               "rate_limit_window": "2 minutes"})  # fmt: skip
    assert status == 201, data
    status, data = await call(client, "PATCH", own, mine, {"rate_limit_max": 10})
    assert (status, data["rate_limit_max"]) == (200, 10)


async def test_keys_on_the_defaults_and_jwts(client, admin) -> None:
    # A key on the global defaults may create keys on the defaults or below them, not above.
    status, data = await call(client, "POST", "/api/v1/api-keys", admin,
                              {"name": "above", "rate_limit_max": 100_000,
                               "rate_limit_window": "1 second"})  # fmt: skip
    assert _seen(status, data) == _refusal("rate_limit_window")
    created = await create_key(client, admin, rate_limit_max=10, rate_limit_window="1 minute")
    assert created["rate_limit_max"] == 10
    # An operator's JWT is not bound by these limits (its exp is a session, not a limit).
    token = bearer(make_token(JWT_SECRET, scopes=["read", "write", "admin"]))
    status, data = await call(client, "POST", "/api/v1/api-keys", token,
                              {"name": "svc", "rate_limit_max": 100_000,
                               "rate_limit_window": "1 second"})  # fmt: skip
    assert status == 201, data
    status, data = await call(client, "POST", "/api/v1/api-keys", token, {"name": "forever"})
    assert (status, data["expires_at"]) == (201, None)
    assert as_key(data)
