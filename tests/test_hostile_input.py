"""Hostile input, as a matrix: forged and broken JWTs, broken and unusable API keys, mass
assignment, pathological bodies and query strings. Each is refused with its documented
4xx; a sweep over every registered route with every hostile body, path and query finds
no 5xx (routes added later are swept too)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
import orjson
import pytest
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.http.appkeys import ENDPOINTS
from service.settings.options import Settings
from tests.conftest import JWT_SECRET, base_env
from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.keys import bearer, key_headers, make_key, make_token


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict[str, Any], claims: dict[str, Any], secret: bytes) -> str:
    """A token signed with HMAC-SHA256 whatever its header claims (alg relabelling)."""
    signing_input = f"{b64url(orjson.dumps(header))}.{b64url(orjson.dumps(claims))}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(signature)}"


def claims(**extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": "mallory", "scopes": "read write admin", "iat": now, "exp": now + 600, **extra}


NOW = int(time.time())
SECRET = JWT_SECRET.encode()
FORGED_TOKENS = {
    "alg none": jwt.encode(claims(), None, algorithm="none"),
    "alg None, empty signature": hand_made({"alg": "None"}, claims(), b"").rsplit(".", 1)[0] + ".",
    "HS512 with the right secret": jwt.encode(claims(), JWT_SECRET, algorithm="HS512"),
    "RS256 relabel of an HMAC signature": hand_made(
        {"alg": "RS256", "typ": "JWT"}, claims(), SECRET
    ),
    "ES256 relabel": hand_made({"alg": "ES256"}, claims(), SECRET),
    "wrong secret": jwt.encode(claims(), "not-the-secret-" * 4, algorithm="HS256"),
    "expired beyond leeway": jwt.encode(claims(exp=NOW - 120), JWT_SECRET, algorithm="HS256"),
    "nbf in the future": jwt.encode(claims(nbf=NOW + 3600), JWT_SECRET, algorithm="HS256"),
    "iat only, no sub": jwt.encode({"iat": NOW, "exp": NOW + 60}, JWT_SECRET, algorithm="HS256"),
    "empty sub": jwt.encode(claims(sub=""), JWT_SECRET, algorithm="HS256"),
    "numeric sub": jwt.encode(claims(sub=42), JWT_SECRET, algorithm="HS256"),
    "unknown scope": jwt.encode(claims(scopes="read root"), JWT_SECRET, algorithm="HS256"),
    "scopes of the wrong type": jwt.encode(claims(scopes=7), JWT_SECRET, algorithm="HS256"),
    "tenant_id not a uuid": jwt.encode(claims(tenant_id="x"), JWT_SECRET, algorithm="HS256"),
    "garbage base64": "!!!.@@@.###",
    "three dots of nothing": "..",
    "valid header, garbage payload": b64url(b'{"alg":"HS256"}') + ".%%%%." + b64url(b"x"),
    "payload not JSON": hand_made({"alg": "HS256"}, {}, SECRET).split(".")[0]
    + "."
    + b64url(b"\xff\xfe not json")
    + ".AAAA",
    "signature stripped": jwt.encode(claims(), JWT_SECRET, algorithm="HS256").rsplit(".", 1)[0],
    "5 KB header, wrong secret": hand_made({"alg": "HS256", "kid": "k" * 5000}, claims(), b"x"),
}


@pytest.mark.parametrize("name", list(FORGED_TOKENS))
async def test_forged_and_broken_jwts_are_401(client: TestClient, name: str) -> None:
    resp = await client.post(
        "/api/v1/tenants",
        json={"name": "x", "slug": unique_slug()},
        headers=bearer(FORGED_TOKENS[name]),
    )
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (401, "INVALID_CREDENTIALS"), body
    assert JWT_SECRET not in json.dumps(body)


async def test_a_100_kb_token_is_refused_before_any_work(client: TestClient) -> None:
    token = hand_made({"alg": "HS256", "kid": "k" * 100_000}, claims(), SECRET)
    resp = await client.get("/api/v1/tenants", headers=bearer(token))
    # The HTTP parser refuses header lines over 8 KiB with 400 before the app runs.
    assert resp.status in (400, 431)


async def test_a_correct_token_passes_the_same_checks(client: TestClient) -> None:
    token = make_token(JWT_SECRET, scopes="read write")
    resp = await client.post(
        "/api/v1/tenants", json={"name": "ok", "slug": unique_slug()}, headers=bearer(token)
    )
    assert resp.status == 201


async def test_broken_and_unusable_api_keys_are_401(client: TestClient, db_conn) -> None:
    good = await make_key(client.app)
    text = good.plaintext
    flipped = text[:-1] + ("A" if text[-1] != "A" else "B")
    body_changed = text[:20] + ("x" if text[20] != "x" else "y") + text[21:]
    revoked = await make_key(client.app)
    assert (
        await client.delete(f"/api/v1/api-keys/{revoked.key.id}", headers={"X-API-Key": text})
    ).status == 204
    expired = await make_key(client.app, expires_at=None)
    await db_conn.execute(
        "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1",
        expired.key.id,
    )
    cases = {
        "wrong checksum": flipped,
        "a changed character": body_changed,
        "truncated": text[:-5],
        "extended": text + "0",
        "another prefix": "sk_prod_" + text[8:],
        "upper-cased": text.upper(),
        "7 KB": "sk_live_" + "a" * 7_000,
        "revoked": revoked.plaintext,
        "expired": expired.plaintext,
    }
    for name, value in cases.items():
        resp = await client.get("/api/v1/tenants", headers={"X-API-Key": value})
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (401, "INVALID_CREDENTIALS"), name
    assert (await client.get("/api/v1/tenants", headers={"X-API-Key": text})).status == 200
    # a key sent as a bearer token is not a JWT
    resp = await client.get("/api/v1/tenants", headers=bearer(text))
    assert resp.status == 401


async def test_a_live_only_deployment_refuses_test_keys(
    db_url: str, tmp_path: Path, aiohttp_client: Any
) -> None:
    settings = Settings.from_env(base_env(db_url, tmp_path, API_KEY_ENVIRONMENTS="live"))
    client = await aiohttp_client(create_app(settings))
    live = await make_key(client.app, environment="live")
    test = await make_key(client.app, environment="test")
    assert test.plaintext.startswith("sk_test_")
    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": test.plaintext})
    assert (resp.status, (await resp.json())["error"]["code"]) == (401, "INVALID_CREDENTIALS")
    admin = {"X-API-Key": live.plaintext}
    assert (await client.get("/api/v1/tenants", headers=admin)).status == 200
    resp = await client.post(
        "/api/v1/api-keys", json={"name": "t", "environment": "test"}, headers=admin
    )
    body = await resp.json()
    assert (resp.status, body["error"]["details"][0]["field"]) == (400, "environment")


async def test_mass_assignment_is_refused_and_changes_nothing(client: TestClient, admin) -> None:
    parent = await create_tenant(client, admin)
    tenant = await create_tenant(client, admin, parent_id=parent["id"])
    other = await create_tenant(client, admin)
    tid = tenant["id"]
    forbidden_on_tenant = {
        "id": str(uuid.uuid4()),
        "parent_id": other["id"],
        "depth": 0,
        "ancestry_path": f"/{tid}",
        "status": "archived",
        "deleted_at": "2020-01-01T00:00:00Z",
        "tenant_id": other["id"],
        "isolation_strategy": "DB_PER_TENANT",
        "region": "elsewhere",
        "created_at": "2020-01-01T00:00:00Z",
        "scopes": ["admin"],
    }
    for field, value in forbidden_on_tenant.items():
        resp = await client.patch(f"/api/v1/tenants/{tid}", json={field: value}, headers=admin)
        body = await resp.json()
        assert resp.status == 400, (field, body)
        assert body["error"]["details"][0]["field"] == field
        resp = await client.post(
            "/api/v1/tenants",
            json={"name": "m", "slug": unique_slug(), field: value} | (
                {"parent_id": parent["id"]} if field != "parent_id" else {}
            ),
            headers=admin,
        )  # fmt: skip
        if field not in ("parent_id", "isolation_strategy"):  # settable on create
            assert resp.status == 400, (field, await resp.json())
    assert await get_json(client, f"/api/v1/tenants/{tid}", admin) == tenant | {
        "updated_at": tenant["updated_at"]
    }
    # keys: no tenant, environment, status or derived fields by PATCH; scopes only within
    # the caller's own
    key = await make_key(client.app, ("read",), tenant_id=tid)
    for field, value in {
        "tenant_id": other["id"], "environment": "test", "status": "active", "id": tid,
        "effective_scopes": ["admin"], "revoked_at": None, "prefix": "sk_live_xxxx",
        "rotated_from": None, "last_used_at": None,
    }.items():  # fmt: skip
        resp = await client.patch(
            f"/api/v1/api-keys/{key.key.id}", json={field: value}, headers=admin
        )
        assert resp.status == 400, field
    reader_admin = await key_headers(client.app, ("read", "admin"))
    resp = await client.patch(
        f"/api/v1/api-keys/{key.key.id}", json={"scopes": ["read", "write"]}, headers=reader_admin
    )
    assert (resp.status, (await resp.json())["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")
    stored = await get_json(client, f"/api/v1/api-keys/{key.key.id}", admin)
    assert (stored["scopes"], stored["tenant_id"]) == (["read"], tid)
    # roles never change their tenant; webhooks and config entries have no owner field
    role = await client.post(
        "/api/v1/roles", json={"name": unique_slug("r"), "scopes": ["read"], "tenant_id": tid},
        headers=admin,
    )  # fmt: skip
    role_id = (await role.json())["id"]
    for path, body in (
        (f"/api/v1/roles/{role_id}", {"tenant_id": other["id"]}),
        (f"/api/v1/roles/{role_id}", {"id": tid}),
    ):
        assert (await client.patch(path, json=body, headers=admin)).status == 400, body
    for body in ({"value": 1, "tenant_id": other["id"]}, {"value": 1, "key": "other"}):
        resp = await client.put(f"/api/v1/tenants/{tid}/config/k", json=body, headers=admin)
        assert resp.status == 400, body
    resp = await client.post(
        f"/api/v1/tenants/{tid}/consent",
        json={"purpose": "ads", "status": "granted", "granted_by": "someone-else"},
        headers=admin,
    )
    assert resp.status == 400


def _deep(levels: int) -> bytes:
    return b'{"name":"d","slug":"d","metadata":' + b'{"a":' * levels + b"1" + b"}" * levels + b"}"


HOSTILE_BODIES: dict[str, bytes] = {
    "deeply nested object": _deep(5_000),
    "deeply nested array": b'{"metadata":{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    "invalid UTF-8": b'{"name":"\xff\xfe","slug":"x"}',
    "lone surrogate": b'{"name":"\\ud800","slug":"x"}',
    "duplicate keys": b'{"name":"a","name":"b","slug":"dup_keys"}',
    "duplicate keys inside": b'{"name":"a","slug":"dup_in","metadata":{"k":1,"k":2}}',
    "NaN": b'{"name":"a","slug":"x","metadata":{"x":NaN}}',
    "Infinity": b'{"name":"a","slug":"x","metadata":{"x":Infinity}}',
    "1e999": b'{"name":"a","slug":"x","metadata":{"x":1e999}}',
    "huge integer": b'{"name":"a","slug":"x","metadata":{"x":' + b"9" * 5000 + b"}}",
    "NUL in a string": b'{"name":"a\\u0000b","slug":"x"}',
    "not an object": b'"just a string"',
    "an array": b"[1,2,3]",
    "null": b"null",
    "truncated": b'{"name":"a","slug":',
    "trailing garbage": b'{"name":"a","slug":"x"} {}',
    "a byte-order mark": b'\xef\xbb\xbf{"name":"a","slug":"bom"}',
    "wrong types everywhere": b'{"name":1,"slug":[],"parent_id":{},"value":{"a":[]},"scopes":7}',
    "ids that are not UUIDs": b'{"parent_id":"../../etc","tenant_id":"1 OR 1=1","role_id":"x"}',
    "SQL in strings": b'{"name":"x\'; DROP TABLE tenants; --","slug":"x","purpose":"a\'--"}',
}


@pytest.mark.parametrize("name", list(HOSTILE_BODIES))
async def test_hostile_bodies_are_400(client: TestClient, admin, name: str) -> None:
    resp = await client.post(
        "/api/v1/tenants",
        data=HOSTILE_BODIES[name],
        headers={**admin, "Content-Type": "application/json"},
    )
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (400, "VALIDATION_ERROR"), body
    assert "Traceback" not in json.dumps(body)


async def test_a_10_mb_body_is_413(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    blob = b'{"value":"' + b"x" * (10 * 1024 * 1024) + b'"}'
    for method, path in (
        ("POST", "/api/v1/tenants"),
        ("PUT", f"/api/v1/tenants/{tenant['id']}/config/big"),
    ):
        resp = await client.request(
            method, path, data=blob, headers={**admin, "Content-Type": "application/json"}
        )
        assert (resp.status, (await resp.json())["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")


HOSTILE_QUERIES = [
    "limit=-1", "limit=0", "limit=99999999999999999999999999", "limit=1&limit=2",
    "limit=abc", "limit=1.5", "cursor=not-a-uuid", "cursor=%00", "status=deleted",
    "include_archived=maybe", "parent_id=1%27%20OR%201=1", "max_depth=-5", "days=-1",
    "days=99999999999", "from=99999-01-01T00:00:00Z", "from=2020-13-01", "to=yesterday",
    "tenant_id=../x", "reveal=yes", "unknown=1", "slug=%00", "%00=1",
]  # fmt: skip


async def test_hostile_query_strings_are_400(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    paths = (
        "/api/v1/tenants",
        f"/api/v1/tenants/{tenant['id']}/descendants",
        "/api/v1/audit-logs",
        "/api/v1/api-keys/dormant",
        "/api/v1/webhooks/deliveries/failed",
    )
    for path in paths:
        for query in HOSTILE_QUERIES:
            resp = await client.get(f"{path}?{query}", headers=admin)
            assert resp.status == 400, (path, query, await resp.text())


HOSTILE_SEGMENTS = ["not-a-uuid", "00000000-0000-0000-0000-000000000000", "%00", "..%2F..",
                    "a" * 300, "%ff%fe", "1%27%20OR%20%271%27=%271", "{id}"]  # fmt: skip
SWEEP_BODIES = [b"", *HOSTILE_BODIES.values()]


def _fill(path: str, segment: str) -> str:
    return re.sub(r"\{[^}]+\}", segment, path)


async def test_no_route_answers_5xx_to_hostile_input(client: TestClient, admin) -> None:
    """Every registered route, with every hostile path segment, body and query."""
    endpoints = sorted(client.app[ENDPOINTS].values(), key=lambda e: (e.path, e.method))
    assert len(endpoints) >= 50
    seen: list[tuple[str, str, int]] = []
    headers = {**admin, "Content-Type": "application/json"}
    for endpoint in endpoints:
        for segment in HOSTILE_SEGMENTS if "{" in endpoint.path else [""]:
            path = _fill(endpoint.path, segment)
            bodies = SWEEP_BODIES if endpoint.method in ("POST", "PUT", "PATCH") else [b""]
            for data in bodies:
                resp = await client.request(endpoint.method, path, data=data, headers=headers)
                seen.append((endpoint.method, path[:60], resp.status))
                assert resp.status < 500, (endpoint.method, path, data[:80], await resp.text())
            for query in ("limit=-1&limit=2", "cursor=%00", "x=" + "y" * 4000):
                resp = await client.request(endpoint.method, f"{path}?{query}", headers=headers)
                assert resp.status < 500, (endpoint.method, path, query, await resp.text())
    assert len(seen) > 1000
