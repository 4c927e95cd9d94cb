"""OPTIONS is a read (read: GET, HEAD, OPTIONS): without credentials it is 401 with the
error body of any other method, with a read key it names the path's methods, a key
without read is 403, and no CORS preflight is ever granted (the console is served
from the API's own origin)."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.support.keys import key_headers

TENANTS = "/api/v1/tenants"
MISSING = "00000000-0000-7000-8000-000000000000"


async def test_options_without_credentials_is_401_like_get(client: TestClient) -> None:
    options = await client.options(TENANTS)
    got = await client.get(TENANTS)
    assert options.status == got.status == 401
    body = await options.json()
    other = await got.json()
    assert body["error"]["code"] == other["error"]["code"]
    assert body == {
        "error": {
            "code": other["error"]["code"],
            "message": other["error"]["message"],
            "request_id": options.headers["X-Request-ID"],
        }
    }
    assert "Allow" not in options.headers


async def test_options_with_a_read_key_names_the_methods(client: TestClient) -> None:
    reader = await key_headers(client.app, ("read",))
    resp = await client.options(f"{TENANTS}/{MISSING}", headers=reader)
    assert (resp.status, await resp.read()) == (204, b"")
    assert resp.headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH"


async def test_options_without_the_read_scope_is_403(client: TestClient) -> None:
    write_only = await key_headers(client.app, ("write",))
    resp = await client.options(TENANTS, headers=write_only)
    assert resp.status == 403
    assert (await resp.json())["error"]["code"] == "INSUFFICIENT_SCOPE"


async def test_options_of_an_admin_route_needs_read_and_admin(client: TestClient) -> None:
    reader = await key_headers(client.app, ("read",))
    resp = await client.options("/api/v1/api-keys/dormant", headers=reader)
    assert (resp.status, (await resp.json())["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")
    both = await key_headers(client.app, ("read", "admin"))
    resp = await client.options("/api/v1/api-keys/dormant", headers=both)
    assert (resp.status, resp.headers["Allow"]) == (204, "GET, HEAD, OPTIONS")


async def test_public_paths_answer_options_without_credentials(client: TestClient) -> None:
    resp = await client.options("/health")
    assert (resp.status, resp.headers["Allow"]) == (204, "GET, HEAD, OPTIONS")


async def test_a_preflight_gets_no_cors_grant(client: TestClient) -> None:
    preflight = {
        "Origin": "https://attacker.example",
        "Access-Control-Request-Method": "DELETE",
        "Access-Control-Request-Headers": "x-api-key",
    }
    resp = await client.options(f"{TENANTS}/{MISSING}", headers=preflight)
    assert resp.status == 401
    assert not [h for h in resp.headers if h.lower().startswith("access-control-")]
    # not even with credentials: no origin is allowed to call the API from a browser
    reader = await key_headers(client.app, ("read",))
    resp = await client.options(f"{TENANTS}/{MISSING}", headers={**preflight, **reader})
    assert resp.status == 204
    assert not [h for h in resp.headers if h.lower().startswith("access-control-")]
