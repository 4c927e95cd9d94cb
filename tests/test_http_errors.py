"""The error body and the HTTP-level errors: 404, 405, 413, 415, bad JSON, request ids."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant


@pytest.fixture
def settings_env() -> dict[str, str]:
    return {"MAX_BODY_BYTES": "4096"}


async def test_unknown_route_is_a_json_404(client: TestClient) -> None:
    resp = await client.get("/api/v1/nothing-here", headers={"X-Request-ID": "req-123"})
    assert resp.status == 404
    assert resp.headers["X-Request-ID"] == "req-123"
    assert await resp.json() == {
        "error": {
            "code": "NOT_FOUND",
            "message": "no route for /api/v1/nothing-here",
            "request_id": "req-123",
        }
    }


async def test_wrong_method_is_a_json_405_with_allow(client: TestClient, admin) -> None:
    resp = await client.put("/api/v1/tenants", json={}, headers=admin)
    assert resp.status == 405
    assert set(resp.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS", "POST"}
    body = await resp.json()
    assert body["error"]["code"] == "METHOD_NOT_ALLOWED"


async def test_big_body_is_a_json_413(client: TestClient, admin) -> None:
    resp = await client.post(
        "/api/v1/tenants",
        json={"name": "x", "slug": "big", "metadata": {"blob": "x" * 10_000}},
        headers=admin,
    )
    assert resp.status == 413
    assert (await resp.json())["error"]["code"] == "PAYLOAD_TOO_LARGE"


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("text/plain", b'{"name": "x", "slug": "ctype"}'),
        ("application/x-www-form-urlencoded", b"name=x&slug=y"),
        ("application/xml", b"<tenant/>"),
    ],
)
async def test_non_json_body_is_a_json_415(
    client: TestClient, admin, content_type: str, data: bytes
) -> None:
    resp = await client.post(
        "/api/v1/tenants", data=data, headers={**admin, "Content-Type": content_type}
    )
    assert resp.status == 415
    assert (await resp.json())["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_merge_patch_media_type_is_json(client: TestClient, admin) -> None:
    tenant = await create_tenant(client, admin)
    resp = await client.patch(
        f"/api/v1/tenants/{tenant['id']}",
        data=b'{"name": "via merge patch"}',
        headers={**admin, "Content-Type": "application/merge-patch+json"},
    )
    assert resp.status == 200
    assert (await resp.json())["name"] == "via merge patch"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"[]",
        b'"text"',
        b"null",
        b'{"name": NaN, "slug": "nan"}',
        b'{"name": "x", "slug": "bad_utf8", "metadata": {"k": "\xff\xfe"}}',
        b"[" * 2000 + b"]" * 2000,
        b'{"name": "x", "slug": "deep", "metadata": ' + b'{"a":' * 40 + b"1" + b"}" * 40 + b"}",
        b'{"name": "x", "slug": "huge_int", "metadata": {"n": 123456789012345678901234567890}}',
        b'{"name": "x", "slug": "nul_key", "metadata": {"a\\u0000": 1}}',
    ],
)
async def test_malformed_bodies_are_400_never_500(client: TestClient, admin, data: bytes) -> None:
    resp = await client.post(
        "/api/v1/tenants", data=data, headers={**admin, "Content-Type": "application/json"}
    )
    body = await resp.json()
    assert resp.status == 400, body
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"]


async def test_every_answer_carries_a_request_id(client: TestClient, admin) -> None:
    ids = set()
    for path in ("/health", "/api/v1/tenants", "/nope"):
        resp = await client.get(path, headers=admin)
        ids.add(resp.headers["X-Request-ID"])
    assert len(ids) == 3
    weird = await client.get("/health", headers={"X-Request-ID": "bad id with spaces"})
    assert weird.headers["X-Request-ID"] != "bad id with spaces"


async def test_every_path_and_method_no_route_takes_is_the_same_json_404(
    client: TestClient,
) -> None:
    """Requests go through one composed handler per route (service/http/middlewares/pipeline.py),
    with no aiohttp middleware: a path no route matches reaches the last, catch-all
    route, and is answered as any other error, whatever the method."""
    assert list(client.app.middlewares) == []
    for method, path in (
        ("PATCH", "/nowhere"),
        ("DELETE", "/api/v1/tenants/a/b/c/d/e"),
        ("HEAD", "/api/v2/tenants"),
        ("OPTIONS", "/no/such/path"),
    ):
        resp = await client.request(method, path, headers={"X-Request-ID": "req-9"})
        assert resp.status == 404, (method, path)
        assert resp.headers["X-Request-ID"] == "req-9"
        assert resp.headers["Server"] == "tenant-service"
        assert "X-RateLimit-Limit" not in resp.headers  # no caller was asked for
        if method != "HEAD":
            assert await resp.json() == {
                "error": {
                    "code": "NOT_FOUND",
                    "message": f"no route for {path}",
                    "request_id": "req-9",
                }
            }
