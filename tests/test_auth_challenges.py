"""Every 401 and 403 carries WWW-Authenticate naming the scheme the request used:
RFC 6750's Bearer parameters for a JWT, the service's own ApiKey scheme for a key."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.conftest import JWT_SECRET
from tests.support.api import unique_slug
from tests.support.keys import bearer, key_headers, make_token

BOTH = 'Bearer realm="tenant-service", ApiKey realm="tenant-service"'


async def _refusal(resp) -> tuple[int, str, str | None]:  # type: ignore[no-untyped-def]
    code = (await resp.json())["error"]["code"]
    return resp.status, code, resp.headers.get("WWW-Authenticate")


async def test_401_and_403_name_the_scheme_and_the_error(client: TestClient) -> None:
    body = {"name": "x", "slug": unique_slug()}
    resp = await client.get("/api/v1/tenants")
    assert await _refusal(resp) == (401, "UNAUTHORIZED", BOTH)

    resp = await client.get("/api/v1/tenants", headers={"X-API-Key": "sk_test_" + "a" * 40})
    assert await _refusal(resp) == (
        401, "INVALID_CREDENTIALS", 'ApiKey realm="tenant-service", error="invalid_token"'
    )  # fmt: skip
    resp = await client.get("/api/v1/tenants", headers=bearer("not.a.token"))
    assert await _refusal(resp) == (
        401, "INVALID_CREDENTIALS", 'Bearer realm="tenant-service", error="invalid_token"'
    )  # fmt: skip

    reader = bearer(make_token(JWT_SECRET, scopes="read"))
    resp = await client.post("/api/v1/tenants", json=body, headers=reader)
    assert await _refusal(resp) == (
        403, "INSUFFICIENT_SCOPE", 'Bearer realm="tenant-service", error="insufficient_scope"'
    )  # fmt: skip
    read_key = await key_headers(client.app, ["read"])
    resp = await client.post("/api/v1/tenants", json=body, headers=read_key)
    assert await _refusal(resp) == (
        403, "INSUFFICIENT_SCOPE", 'ApiKey realm="tenant-service", error="insufficient_scope"'
    )  # fmt: skip

    # Answers that are no refusal of credentials carry none.
    resp = await client.get("/api/v1/tenants", headers=read_key)
    assert resp.status == 200
    assert "WWW-Authenticate" not in resp.headers


async def test_the_document_describes_the_challenge(client: TestClient) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    for name in ("Unauthorized", "Forbidden"):
        headers = document["components"]["responses"][name]["headers"]
        assert headers["WWW-Authenticate"] == {"$ref": "#/components/headers/WWW-Authenticate"}
    described = document["components"]["headers"]["WWW-Authenticate"]["description"]
    assert 'error="insufficient_scope"' in described
    assert "ApiKey" in described
