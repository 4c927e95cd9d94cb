"""The fast head of a rendered document's answer (service/http/rendered_answers.py): the
same requests sent with it and with aiohttp's own path give the same bytes, the Date and
where the rate-limit bucket stands aside; only plain GETs of HTTP/1.1 keep-alive whose
body is not to be compressed take it; a connection goes on serving after it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.http import rendered_answers
from service.http.rendered_answers import RenderedAnswer
from tests.support.api import create_tenant

_MOVING = re.compile(
    rb"^(Date|X-RateLimit-Remaining|X-RateLimit-Reset|RateLimit): .*$", re.MULTILINE
)


async def _exchange(client: TestClient, raw: bytes, *, answers: int = 1) -> list[bytes]:
    """Send `raw` on one new connection and read `answers` whole answers."""
    server = client.server
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        writer.write(raw)
        await writer.drain()
        out = []
        for _ in range(answers):
            head = await reader.readuntil(b"\r\n\r\n")
            match = re.search(rb"\r\nContent-Length: (\d+)\r\n", head)
            size = int(match.group(1)) if match and not raw.startswith(b"HEAD") else 0
            out.append(head + await reader.readexactly(size))
        return out
    finally:
        writer.close()


def _request(method: str, path: str, headers: dict[str, str], version: str = "1.1") -> bytes:
    lines = [f"{method} {path} HTTP/{version}", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.fixture
async def documents(client: TestClient, admin: dict[str, str]) -> dict[str, Any]:
    tenant = await create_tenant(client, admin)
    for n in range(12):  # a context well over 1 KB: gzip when asked for
        resp = await client.put(
            f"/api/v1/tenants/{tenant['id']}/config/k{n}",
            json={"value": "x" * 100},
            headers=admin,
        )
        assert resp.status in (200, 201), await resp.text()
    context = await client.get(f"/api/v1/tenants/{tenant['id']}/context", headers=admin)
    assert len(await context.read()) > 1024
    return {"tenant": f"/api/v1/tenants/{tenant['id']}", "etag": context.headers["ETag"]}


# (name, method, path suffix, extra headers, HTTP version, fast head expected)
CASES = [
    ("tenant", "GET", "", {}, "1.1", True),
    ("context", "GET", "/context", {}, "1.1", True),
    ("tenant, gzip asked", "GET", "", {"Accept-Encoding": "gzip"}, "1.1", True),
    ("context, gzip asked", "GET", "/context", {"Accept-Encoding": "gzip"}, "1.1", True),
    ("context, two codings", "GET", "/context", {"Accept-Encoding": "deflate, gzip"}, "1.1", True),
    ("context, HEAD, gzip asked", "HEAD", "/context", {"Accept-Encoding": "gzip"}, "1.1", False),
    ("context, identity", "GET", "/context", {"Accept-Encoding": "identity"}, "1.1", True),
    ("context, gzip;q=0", "GET", "/context", {"Accept-Encoding": "gzip;q=0"}, "1.1", True),
    ("context, HEAD", "HEAD", "/context", {}, "1.1", False),
    ("context, close", "GET", "/context", {"Connection": "close"}, "1.1", False),
    ("context, HTTP/1.0", "GET", "/context", {}, "1.0", False),
    ("context, revealed", "GET", "/context?reveal=true", {}, "1.1", False),
    ("context, current copy", "GET", "/context", {"If-None-Match": "ETAG"}, "1.1", False),
]


@pytest.mark.parametrize(
    ("method", "suffix", "extra", "version", "fast"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_the_fast_head_sends_what_aiohttp_sends(
    client: TestClient,
    admin: dict[str, str],
    documents: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    suffix: str,
    extra: dict[str, str],
    version: str,
    fast: bool,
) -> None:
    heads: list[str] = []
    set_head = RenderedAnswer.set_head

    def counted(self: RenderedAnswer, request_id: str, fields: str) -> None:
        heads.append(request_id)
        set_head(self, request_id, fields)

    monkeypatch.setattr(RenderedAnswer, "set_head", counted)
    headers = {**admin, "X-Request-ID": "req-1", **extra}
    if "If-None-Match" in headers:
        headers["If-None-Match"] = documents["etag"]
    raw = _request(method, documents["tenant"] + suffix, headers, version)
    # The read cache holds the document from here on, and gzipped once asked for (this
    # first answer gzipped by aiohttp, later ones sending the same bytes again).
    (first_answer,) = await _exchange(client, raw)
    heads.clear()
    (fast_answer,) = await _exchange(client, raw)
    assert heads == (["req-1"] if fast else [])
    assert _MOVING.sub(rb"\1: -", fast_answer) == _MOVING.sub(rb"\1: -", first_answer)
    monkeypatch.setattr(rendered_answers, "FAST_HEADS", False)
    (slow_answer,) = await _exchange(client, raw)
    assert heads == (["req-1"] if fast else [])

    assert _MOVING.sub(rb"\1: -", fast_answer) == _MOVING.sub(rb"\1: -", slow_answer)
    assert fast_answer.startswith(
        b"HTTP/1.1 304 " if "If-None-Match" in extra else f"HTTP/{version} 200 OK\r\n".encode()
    )


async def test_a_connection_goes_on_after_fast_heads(
    client: TestClient, admin: dict[str, str], documents: dict[str, Any]
) -> None:
    path = documents["tenant"]
    raw = b"".join(
        _request("GET", path + suffix, {**admin, "X-Request-ID": f"req-{n}"})
        for n, suffix in enumerate(["", "/context", "", "/context"])
    )
    answers = await _exchange(client, raw, answers=4)
    assert [re.search(rb"X-Request-ID: (\S+)", a).group(1) for a in answers] == [  # type: ignore[union-attr]
        b"req-0",
        b"req-1",
        b"req-2",
        b"req-3",
    ]
    assert all(a.startswith(b"HTTP/1.1 200 OK\r\n") for a in answers)
    assert answers[0].split(b"\r\n\r\n", 1)[1] == answers[2].split(b"\r\n\r\n", 1)[1]
    assert answers[1].split(b"\r\n\r\n", 1)[1] == answers[3].split(b"\r\n\r\n", 1)[1]


async def test_a_request_id_that_is_not_ours_to_echo_is_replaced(
    client: TestClient, admin: dict[str, str], documents: dict[str, Any]
) -> None:
    for given in ("req 1", "req\t1", "x" * 129):
        raw = _request("GET", documents["tenant"], {**admin, "X-Request-ID": given})
        (answer,) = await _exchange(client, raw)
        echoed = re.search(rb"\r\nX-Request-ID: ([^\r]*)\r\n", answer)
        assert echoed is not None
        assert re.fullmatch(rb"[0-9a-f]{32}", echoed.group(1)), answer[:400]


async def test_a_changed_document_is_gzipped_anew(
    client: TestClient, admin: dict[str, str], documents: dict[str, Any]
) -> None:
    """The gzipped bytes belong to one version of a document: after a change the next
    gzipped answer is the new document's."""
    context = documents["tenant"] + "/context"
    gzip = {**admin, "Accept-Encoding": "gzip"}
    answers = [await client.get(context, headers=gzip) for _ in range(2)]  # gzipped, kept
    assert [a.headers["Content-Encoding"] for a in answers] == ["gzip", "gzip"]
    assert [(await a.json())["resolved_config"]["k0"]["value"] for a in answers] == ["x" * 100] * 2
    changed = await client.put(
        documents["tenant"] + "/config/k0", json={"value": "changed"}, headers=admin
    )
    assert changed.status == 200, await changed.text()
    token = {"X-Consistency-Token": changed.headers["X-Consistency-Token"]}
    after = await client.get(context, headers={**gzip, **token})
    assert after.headers["Content-Encoding"] == "gzip"
    assert after.headers["ETag"] != answers[0].headers["ETag"]
    assert (await after.json())["resolved_config"]["k0"]["value"] == "changed"
    plain = await client.get(context, headers={**admin, "Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers
    assert await plain.json() == await after.json()
