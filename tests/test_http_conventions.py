"""HTTP conventions on every answer: gzip when asked (over 1 KB), Cache-Control: no-store
on credentialed routes, a Server header without versions, and `Link: rel="next"` on
every paged list (the webhook delivery lists are covered in test_delivery_queue.py)."""

from __future__ import annotations

import gzip
import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.http.conventions import accepts_gzip
from tests.support.access import create_key
from tests.support.api import create_tenant

IDENTITY = {"Accept-Encoding": "identity"}  # aiohttp's client asks for gzip by default
GZIP = {"Accept-Encoding": "gzip"}
_LINK = re.compile(r'^<(?P<url>[^>]+)>; rel="next"$')


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip", True),
        ("gzip, deflate, br", True),
        ("br;q=1.0, gzip;q=0.5", True),
        ("GZIP", True),
        ("x-gzip", True),
        ("*", True),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("*;q=0", False),
        ("*, gzip;q=0", False),
        ("deflate, br", False),
        ("identity", False),
        ("", False),
        ("gzip;q=nonsense", False),
    ],
)
def test_accept_encoding_is_read_with_its_weights(header: str, expected: bool) -> None:
    assert accepts_gzip(header) is expected


async def test_large_answers_are_gzipped_when_asked(client: TestClient) -> None:
    plain = await client.get("/api/v1/openapi.json", headers=IDENTITY, auto_decompress=False)
    body = await plain.read()
    assert len(body) > 100_000
    assert "Content-Encoding" not in plain.headers
    assert plain.headers["Vary"] == "Accept-Encoding"
    packed = await client.get("/api/v1/openapi.json", headers=GZIP, auto_decompress=False)
    compressed = await packed.read()
    assert packed.headers["Content-Encoding"] == "gzip"
    assert packed.headers["Vary"] == "Accept-Encoding"
    assert packed.headers["Content-Length"] == str(len(compressed))
    assert len(compressed) * 10 < len(body)
    assert gzip.decompress(compressed) == body
    head = await client.head("/api/v1/openapi.json", headers=GZIP, auto_decompress=False)
    assert (head.headers["Content-Encoding"], head.headers["Content-Length"]) == (
        "gzip",
        str(len(compressed)),
    )
    refused = await client.get(
        "/api/v1/openapi.json", headers={"Accept-Encoding": "gzip;q=0"}, auto_decompress=False
    )
    assert "Content-Encoding" not in refused.headers
    assert await refused.read() == body


async def test_small_answers_are_sent_as_they_are(client: TestClient) -> None:
    resp = await client.get("/health", headers=GZIP, auto_decompress=False)
    assert "Content-Encoding" not in resp.headers
    assert "Vary" not in resp.headers
    assert await resp.json() == {"status": "ok"}


async def test_authenticated_answers_are_gzipped_and_never_stored(
    client: TestClient, admin: dict[str, str]
) -> None:
    for _ in range(6):
        await create_tenant(client, admin, metadata={"note": "x" * 200})
    resp = await client.get("/api/v1/tenants", headers={**admin, **GZIP}, auto_decompress=False)
    assert resp.status == 200
    assert resp.headers["Content-Encoding"] == "gzip"
    assert resp.headers["Cache-Control"] == "no-store"
    page = await client.get("/api/v1/tenants", headers={**admin, **IDENTITY})
    assert gzip.decompress(await resp.read()) == await page.read()


async def test_cache_control_no_store_on_credentialed_routes_only(
    client: TestClient, admin: dict[str, str]
) -> None:
    tenant = await create_tenant(client, admin)
    credentialed = [
        await client.get(f"/api/v1/tenants/{tenant['id']}", headers=admin),  # 200
        await client.get("/api/v1/tenants/00000000-0000-7000-8000-000000000000", headers=admin),
        await client.get("/api/v1/tenants"),  # 401: no credentials
        await client.post("/api/v1/tenants", json={}, headers=admin),  # 400
    ]
    assert [r.status for r in credentialed] == [200, 404, 401, 400]
    assert [r.headers.get("Cache-Control") for r in credentialed] == ["no-store"] * 4
    public = [await client.get(path) for path in ("/health", "/api/v1/openapi.json", "/nope")]
    assert [r.status for r in public] == [200, 200, 404]
    assert [r.headers.get("Cache-Control") for r in public] == [None] * 3
    console = await client.get("/console")
    assert console.headers["Cache-Control"] == "no-cache"  # the console's own choice


async def test_server_header_names_no_versions(client: TestClient, admin: dict[str, str]) -> None:
    answers = [
        await client.get("/health"),
        await client.get("/nope"),
        await client.put("/api/v1/tenants", headers=admin),
        await client.options("/api/v1/tenants", headers=admin),
        await client.get("/api/v1/tenants"),
        await client.get("/api/v1/tenants", headers=admin),
    ]
    assert [r.status for r in answers] == [200, 404, 405, 204, 401, 200]
    assert {r.headers["Server"] for r in answers} == {"tenant-service"}


def next_link(resp: Any) -> str | None:
    header = resp.headers.get("Link")
    if header is None:
        return None
    match = _LINK.match(header)
    assert match is not None, header
    return match.group("url")


async def follow(client: TestClient, url: str, headers: dict[str, str]) -> list[Any]:
    """Every page of a list, following Link alone; the bodies in order."""
    pages = []
    next_url: str | None = url
    while next_url is not None:
        resp = await client.get(next_url, headers=headers)
        assert resp.status == 200, await resp.text()
        pages.append(await resp.json())
        next_url = next_link(resp)
        assert len(pages) < 20
    return pages


async def test_every_keyset_list_links_its_next_page(
    client: TestClient, admin: dict[str, str]
) -> None:
    parent = await create_tenant(client, admin)
    children = [await create_tenant(client, admin, parent_id=parent["id"]) for _ in range(3)]
    child_ids = sorted(c["id"] for c in children)

    url = f"/api/v1/tenants?limit=2&parent_id={parent['id']}"
    resp = await client.get(url, headers=admin)
    body = await resp.json()
    assert next_link(resp) == f"{url}&cursor={body['next_cursor']}"
    pages = await follow(client, url, admin)
    assert [t["id"] for p in pages for t in p["data"]] == child_ids
    assert [p["has_more"] for p in pages] == [True, False]

    url = f"/api/v1/tenants/{parent['id']}/children?limit=2"
    resp = await client.get(url, headers=admin)
    assert next_link(resp) == f"{url}&cursor={resp.headers['X-Next-Cursor']}"
    for counts in ("", "&include_child_counts=true"):
        pages = await follow(client, url + counts, admin)
        assert [t["id"] for p in pages for t in p] == child_ids

    for _ in range(2):
        await create_key(client, admin)
    pages = await follow(client, "/api/v1/api-keys?limit=1", admin)
    assert len(pages) >= 3
    assert [p["has_more"] for p in pages] == [True] * (len(pages) - 1) + [False]

    for name in ("renamed once", "renamed twice"):
        resp = await client.patch(
            f"/api/v1/tenants/{parent['id']}", json={"name": name}, headers=admin
        )
        assert resp.status == 200
    url = f"/api/v1/audit-logs?limit=2&tenant_id={parent['id']}"
    resp = await client.get(url, headers=admin)
    assert next_link(resp) == f"{url}&cursor={resp.headers['X-Next-Cursor']}"
    pages = await follow(client, url, admin)
    entries = [e["id"] for p in pages for e in p]
    assert len(entries) == len(set(entries)) >= 3  # created, renamed twice


async def test_a_next_link_replaces_the_cursor_it_was_given(
    client: TestClient, admin: dict[str, str]
) -> None:
    parent = await create_tenant(client, admin)
    for _ in range(3):
        await create_tenant(client, admin, parent_id=parent["id"])
    first = await client.get(f"/api/v1/tenants/{parent['id']}/children?limit=1", headers=admin)
    second = await client.get(next_link(first) or "", headers=admin)
    link = next_link(second)
    assert link is not None
    assert link.count("cursor=") == 1
    assert link.endswith(f"cursor={second.headers['X-Next-Cursor']}")
