"""HEAD, OPTIONS and 405 over every registered route (RFC 9110 sections 9.3.2, 9.3.7 and
15.5.6): HEAD answers GET's status and headers without a body; OPTIONS and every 405
name exactly the methods of the path asked, never those of another path it shadows."""

from __future__ import annotations

import re
from typing import Any

from aiohttp.test_utils import TestClient

from service.app import apis
from service.http.appkeys import ENDPOINTS
from service.http.routing import HOT_PATHS, Endpoint
from tests.support.api import create_tenant

# Headers that differ between two answers to the same request by nature.
VOLATILE = {"Date", "X-Request-ID", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit"}
# Message framing (RFC 9110 9.3.2 lets HEAD omit it): a streamed GET is chunked.
VOLATILE |= {"Transfer-Encoding"}
MISSING = "00000000-0000-7000-8000-000000000000"
UNUSED = ("PUT", "PATCH", "DELETE", "POST")
# Answers that change from one request to the next: the request counters, and the
# export (each export is audited and the audit log is part of the next one).
CHANGING = {"/metrics", "/api/v1/tenants/{id}/export"}


def paths(client: TestClient) -> dict[str, set[str]]:
    table: dict[tuple[str, str], Endpoint] = client.app[ENDPOINTS]
    found: dict[str, set[str]] = {}
    for method, path in table:
        found.setdefault(path, set()).add(method)
    return found


def concrete(path: str, tenant_id: str) -> str:
    """The template with its parameters filled: the tenant's id under /tenants, a
    missing id elsewhere (a 404 must be as true to HEAD as a 200)."""
    values = {"key": "app.theme", "purpose": "marketing", "name": "app.js"}

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "id":
            return tenant_id if path.startswith("/api/v1/tenants/") else MISSING
        return values.get(name, MISSING)

    return re.sub(r"\{(\w+)\}", fill, path)


def stable(headers: Any) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k not in VOLATILE}


def allow(resp: Any) -> set[str]:
    return set(resp.headers["Allow"].split(", "))


async def test_head_answers_every_get_route_as_get_without_a_body(
    client: TestClient, admin: dict[str, str]
) -> None:
    tenant = await create_tenant(client, admin)
    headers = {**admin, "Accept-Encoding": "identity"}  # lengths of the bodies as they are
    checked = 0
    for path, methods in paths(client).items():
        if "GET" not in methods or path.endswith("/context-changes"):
            continue  # an endless stream: tests/test_context_stream.py checks its HEAD
        url = concrete(path, tenant["id"])
        got = await client.get(url, headers=headers)
        got_body = await got.read()
        head = await client.head(url, headers=headers)
        assert (await head.read()) == b"", path
        assert head.status == got.status, (path, got_body)
        if path in CHANGING:
            assert stable(head.headers).keys() == stable(got.headers).keys(), path
            continue
        assert stable(head.headers) == stable(got.headers), path
        if got.status == 200 and "Transfer-Encoding" not in got.headers:
            assert head.headers["Content-Length"] == str(len(got_body)), path
        checked += 1
    assert checked >= 30


async def test_head_of_a_tenant_answers_304_for_a_current_etag(
    client: TestClient, admin: dict[str, str]
) -> None:
    tenant = await create_tenant(client, admin)
    url = f"/api/v1/tenants/{tenant['id']}"
    etag = (await client.get(url, headers=admin)).headers["ETag"]
    head = await client.head(url, headers={**admin, "If-None-Match": etag})
    assert (head.status, head.headers["ETag"]) == (304, etag)


async def test_head_needs_credentials_as_get_does(client: TestClient) -> None:
    head = await client.head("/api/v1/tenants")
    got = await client.get("/api/v1/tenants")
    assert head.status == got.status == 401


async def test_options_and_405_name_the_methods_of_the_path_asked(
    client: TestClient, admin: dict[str, str]
) -> None:
    tenant = await create_tenant(client, admin)
    for path, methods in paths(client).items():
        expected = methods | {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
        url = concrete(path, tenant["id"])
        options = await client.options(url, headers=admin)  # a read, as GET
        assert (options.status, await options.read()) == (204, b""), path
        assert allow(options) == expected, path
        for method in UNUSED:
            if method in methods:
                continue
            resp = await client.request(method, url, headers=admin)
            body = await resp.json()
            assert resp.status == 405, (path, method, body)
            assert body["error"]["code"] == "METHOD_NOT_ALLOWED"
            assert allow(resp) == expected, (path, method)
        if "GET" not in methods:
            resp = await client.head(url, headers=admin)
            assert (resp.status, allow(resp)) == (405, expected), path


async def test_a_fixed_path_does_not_borrow_the_methods_of_a_template_beside_it(
    client: TestClient, admin: dict[str, str]
) -> None:
    options = await client.options("/api/v1/api-keys/dormant", headers=admin)
    assert (options.status, options.headers["Allow"]) == (204, "GET, HEAD, OPTIONS")
    resp = await client.patch("/api/v1/api-keys/dormant", json={}, headers=admin)
    assert resp.status == 405
    assert resp.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert await resp.json() == {
        "error": {
            "code": "METHOD_NOT_ALLOWED",
            "message": "PATCH is not allowed here",
            "request_id": resp.headers["X-Request-ID"],
        }
    }
    options = await client.options(f"/api/v1/api-keys/{MISSING}", headers=admin)
    assert options.headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH"


async def test_openapi_document_has_no_head_or_options_operations(client: TestClient) -> None:
    document = await (await client.get("/api/v1/openapi.json")).json()
    for item in document["paths"].values():
        assert not {"head", "options"} & set(item)


def test_no_two_templates_match_one_path() -> None:
    # Resources are registered hottest first (service/http/routing.py HOT_PATHS), which
    # is only harmless while no path could match two templates: aiohttp would answer
    # with whichever came first. A fixed path beside a template (`/tenants/batch` and
    # `/tenants/{id}`) is fine: aiohttp tries the longest fixed prefix first.
    templates = sorted({e.path for api in apis() for e in api.endpoints if "{" in e.path})

    def could_match_both(a: list[str], b: list[str]) -> bool:
        return len(a) == len(b) and all(
            x == y or x.startswith("{") or y.startswith("{") for x, y in zip(a, b, strict=True)
        )

    split = {t: t.strip("/").split("/") for t in templates}
    clashes = [
        (a, b)
        for i, a in enumerate(templates)
        for b in templates[i + 1 :]
        if could_match_both(split[a], split[b])
    ]
    assert clashes == []
    assert set(HOT_PATHS) <= set(templates)
