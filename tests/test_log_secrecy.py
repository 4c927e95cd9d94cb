"""The logs of a whole session that handles keys, tokens, secrets and sensitive values
carry none of them, and every request line has its fields."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from tests.conftest import HMAC_SECRET, JWT_SECRET, base_env
from tests.support.keys import bearer, make_token
from tests.support.live import admin_key
from tests.support.processes import REPO_ROOT, ServiceProcess

SENSITIVE = "sensitive-value-7f3a9c"
REQUEST_FIELDS = {"request_id", "method", "route", "status", "duration_ms", "actor_id"}


class Session:
    def __init__(self, url: str) -> None:
        self.url = url

    def call(
        self, method: str, path: str, headers: dict[str, str], body: Any = None
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(  # noqa: S310 - loopback only
            self.url + path, data=data, method=method,
            headers={**headers, "Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:  # noqa: S310
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None


async def test_a_session_with_every_kind_of_secret_logs_none(
    fresh_db_url: str, tmp_path: Path
) -> None:
    encryption_key = base64.b64encode(os.urandom(32)).decode()
    new_encryption_key = base64.b64encode(os.urandom(32)).decode()
    admin_text = await admin_key(fresh_db_url, HMAC_SECRET)
    secrets = {admin_text, JWT_SECRET, HMAC_SECRET, encryption_key, new_encryption_key, SENSITIVE}
    env = base_env(fresh_db_url, tmp_path, LOG_LEVEL="debug", SERVICE_ENCRYPTION_KEY=encryption_key)
    service = ServiceProcess({"PATH": os.environ.get("PATH", ""), **env}, tmp_path, cwd=REPO_ROOT)
    try:
        service.wait_ready()
        api = Session(service.url)
        admin = {"X-API-Key": admin_text}
        status, tenant = api.call("POST", "/api/v1/tenants", admin, {"name": "S", "slug": "s"})
        assert status == 201
        tid = tenant["id"]

        key_body = {"name": "k", "scopes": ["read"]}
        status, created = api.call("POST", "/api/v1/api-keys", admin, key_body)
        assert status == 201
        secrets.add(created["plaintext_key"])
        status, rotated = api.call("POST", f"/api/v1/api-keys/{created['id']}/rotate", admin)
        assert status == 201
        secrets.add(rotated["plaintext_key"])
        assert api.call("GET", "/api/v1/tenants", {"X-API-Key": rotated["plaintext_key"]})[0] == 200

        token = make_token(JWT_SECRET, scopes="read write")
        secrets.add(token)
        assert api.call("GET", f"/api/v1/tenants/{tid}", bearer(token))[0] == 200
        forged = make_token("not-the-secret-but-long-enough-0123456789abcdef", scopes="admin")
        secrets.add(forged)
        assert api.call("GET", "/api/v1/tenants", bearer(forged))[0] == 401
        # A well-formed key that does not exist, and keys in places they do not belong.
        unknown = created["plaintext_key"][:-10] + "0123456789"
        secrets.add(unknown)
        assert api.call("GET", "/api/v1/tenants", {"X-API-Key": unknown})[0] == 401
        assert api.call("GET", f"/api/v1/{rotated['plaintext_key']}", admin)[0] == 404
        assert api.call("GET", f"/api/v1/tenants?slug={admin_text}", admin)[1]["data"] == []

        path = f"/api/v1/tenants/{tid}/config/api_token"
        assert api.call("PUT", path, admin, {"value": SENSITIVE, "sensitive": True})[0] == 201
        assert api.call("GET", f"{path}?reveal=true", admin)[1]["value"] == SENSITIVE
        assert api.call("GET", f"/api/v1/tenants/{tid}/context?reveal=true", admin)[0] == 200
        status, rotation = api.call(
            "POST", "/api/v1/maintenance/rotate-encryption-key", admin,
            {"old_key": encryption_key, "new_key": new_encryption_key},
        )  # fmt: skip
        assert (status, rotation["config_entries_rotated"]) == (200, 1)
        status, _ = api.call(
            "POST", "/api/v1/maintenance/rotate-encryption-key", admin,
            {"old_key": new_encryption_key[::-1], "new_key": encryption_key},
        )  # fmt: skip
        assert status in (400, 409)
        assert api.call("GET", f"{path}?reveal=true", admin)[1]["value"] == SENSITIVE
        assert api.call("GET", f"/api/v1/no-such/{uuid.uuid4()}", admin)[0] == 404
    finally:
        code = service.stop()
    output = service.output()
    assert code == 0, output[-4000:]
    for secret in secrets:
        for form in {secret, secret[:24]}:
            assert form not in output, "a secret reached the logs"

    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert len(lines) == len([line for line in output.splitlines() if line.strip()]), (
        "every line is a JSON object"
    )
    requests = [line for line in lines if line["event"] == "request"]
    assert len(requests) >= 17  # every call above, and the readiness probe
    for line in requests:
        assert line.keys() >= REQUEST_FIELDS, line
        assert line["level"] == "info"
        assert isinstance(line["duration_ms"], float | int)
    by_route = {(r["method"], r["route"], r["status"]) for r in requests}
    assert ("GET", "/api/v1/tenants/{id}", 200) in by_route  # the template, not the id
    assert ("GET", None, 404) in by_route  # an unknown route has no template
    assert not any(tid in json.dumps(r) for r in requests), "paths with ids are not logged"
    jwt_line = next(r for r in requests if r["route"] == "/api/v1/tenants/{id}")
    assert jwt_line["actor_id"] == "user-1"  # the JWT's sub
    admin_line = next(r for r in requests if r["method"] == "POST" and r["status"] == 201)
    assert uuid.UUID(admin_line["actor_id"])  # an API key's id, never its text
    events = [line["event"] for line in lines]
    assert events[0] in ("service starting", "development secrets in use")
    for expected in ("service started", "service stopping", "service stopped"):
        assert expected in events


def test_anything_shaped_like_a_key_or_token_is_redacted_before_writing() -> None:
    """The net under the rule: a key pasted into a message is still not written."""
    from service.observability.logs import REDACTED, redact

    key = "sk_live_" + "A1b2C3d4" * 6 + "x"
    token = make_token(JWT_SECRET)
    event = {
        "event": f"failed for {key}",
        "nested": {"header": f"Bearer {token}", "items": [key, 3]},
        "secret": "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ",
        "count": 3,
    }
    redacted = redact(None, "info", dict(event))
    assert redacted == {
        "event": f"failed for {REDACTED}",
        "nested": {"header": f"Bearer {REDACTED}", "items": [REDACTED, 3]},
        "secret": REDACTED,
        "count": 3,
    }
