"""The console's files over HTTP (public, strict security headers, ETags, nothing outside
its folder) and static guards on its source: no inline script, no HTML sinks, no storage
but sessionStorage."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from aiohttp.test_utils import TestClient

from service.console.assets import STATIC_DIR, ConsoleAssets
from service.handlers.console import CONTENT_SECURITY_POLICY

JS_FILES = sorted(STATIC_DIR.glob("*.js"))


def directives(policy: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in policy.split(";"):
        name, *values = part.split()
        parsed[name] = values
    return parsed


def check_security_headers(headers: dict[str, str] | object) -> None:
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY  # type: ignore[index]
    assert headers["X-Content-Type-Options"] == "nosniff"  # type: ignore[index]
    assert headers["Referrer-Policy"] == "no-referrer"  # type: ignore[index]
    assert headers["X-Frame-Options"] == "DENY"  # type: ignore[index]


def test_the_policy_allows_no_inline_script_no_eval_and_no_framing() -> None:
    policy = directives(CONTENT_SECURITY_POLICY)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert policy["form-action"] == ["'none'"]
    assert policy["require-trusted-types-for"] == ["'script'"]
    assert not any(
        "unsafe" in value or value in {"*", "data:", "http:", "https:"}
        for values in policy.values()
        for value in values
    )


async def test_the_page_needs_no_credentials_and_carries_the_policy(client: TestClient) -> None:
    resp = await client.get("/console")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
    assert resp.headers["Cache-Control"] == "no-cache"
    check_security_headers(resp.headers)
    body = await resp.text()
    assert '<script type="module" src="/console/app.js"></script>' in body
    assert "X-RateLimit-Limit" not in resp.headers  # public: not rate limited either


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("app.js", "text/javascript; charset=utf-8"),
        ("api.js", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
        ("index.html", "text/html; charset=utf-8"),
    ],
)
async def test_files_are_served_with_their_type(
    client: TestClient, name: str, content_type: str
) -> None:
    resp = await client.get(f"/console/{name}")
    assert resp.status == 200
    assert resp.headers["Content-Type"] == content_type
    check_security_headers(resp.headers)
    assert await resp.read() == (STATIC_DIR / name).read_bytes()


async def test_every_file_in_the_folder_is_served(client: TestClient) -> None:
    names = ConsoleAssets.load().names()
    assert {p.name for p in STATIC_DIR.iterdir()} == set(names)
    for name in names:
        resp = await client.get(f"/console/{name}")
        assert resp.status == 200, name


async def test_a_trailing_slash_redirects_to_the_page(client: TestClient) -> None:
    resp = await client.get("/console/", allow_redirects=False)
    assert resp.status == 308
    assert resp.headers["Location"] == "/console"
    check_security_headers(resp.headers)


async def test_an_unchanged_file_answers_304(client: TestClient) -> None:
    first = await client.get("/console/app.js")
    etag = first.headers["ETag"]
    again = await client.get("/console/app.js", headers={"If-None-Match": etag})
    assert again.status == 304
    assert again.headers["ETag"] == etag
    check_security_headers(again.headers)
    changed = await client.get("/console/app.js", headers={"If-None-Match": '"other"'})
    assert changed.status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/console/missing.js",
        "/console/assets.py",
        "/console/__init__.py",
        "/console/..%2Fassets.py",
        "/console/%2E%2E%2Fhandlers",
        "/console/static",
        "/console/app.js/x",
        "/console/.hidden.js",
    ],
)
async def test_nothing_outside_the_folder_is_served(client: TestClient, path: str) -> None:
    resp = await client.get(path)
    assert resp.status == 404
    body = await resp.json()
    assert body["error"]["code"] == "NOT_FOUND"


async def test_api_answers_stay_json_and_need_credentials(client: TestClient) -> None:
    # The console changes nothing for API clients: the API still wants a key.
    resp = await client.get("/api/v1/tenants")
    assert resp.status == 401
    assert "Content-Security-Policy" not in resp.headers


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self.bad_attributes: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, _ in attrs:
            if name.startswith("on") or name == "style":
                self.bad_attributes.append(f"{tag}[{name}]")
        if tag == "style":
            self.bad_attributes.append("style element")
        if tag == "script":
            self.scripts.append(dict(attrs))
            self._in_script = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def test_index_has_no_inline_script_style_or_handlers() -> None:
    markup = _Markup()
    markup.feed((STATIC_DIR / "index.html").read_text())
    assert markup.scripts == [{"type": "module", "src": "/console/app.js"}]
    assert markup.inline == []
    assert markup.bad_attributes == []


# Ways to turn data into markup or code, to keep a credential beyond the tab, or to
# put one in a URL: none may appear in the console's scripts.
FORBIDDEN = {
    "innerHTML": r"\binnerHTML\b",
    "outerHTML": r"\bouterHTML\b",
    "insertAdjacentHTML": r"\binsertAdjacentHTML\b",
    "document.write": r"\bdocument\.write",
    "eval": r"\beval\s*\(",
    "new Function": r"\bnew\s+Function\b",
    "string timers": r"set(Timeout|Interval)\(\s*['\"`]",
    "DOMParser": r"\bDOMParser\b",
    "createContextualFragment": r"createContextualFragment",
    "localStorage": r"\blocalStorage\b",
    "indexedDB": r"\bindexedDB\b",
    "document.cookie": r"document\.cookie",
    "javascript: URLs": r"javascript:",
    "style attributes": r"setAttribute\(\s*['\"]style",
    "key in a query": r"api_key=|token=",
}


@pytest.mark.parametrize("path", JS_FILES, ids=lambda p: p.name)
def test_scripts_use_no_html_sinks_or_lasting_storage(path: object) -> None:
    text = path.read_text()  # type: ignore[attr-defined]
    # Comments may name what the code avoids; the code itself must not use it.
    source = re.sub(r"^\s*//.*$|/\*.*?\*/", "", text, flags=re.MULTILINE | re.DOTALL)
    found = [name for name, pattern in FORBIDDEN.items() if re.search(pattern, source)]
    assert found == []


def test_the_credential_lives_in_session_storage() -> None:
    api = (STATIC_DIR / "api.js").read_text()
    assert "sessionStorage.setItem(STORAGE_KEY" in api
    assert '"X-API-Key": credential.value' in api
    assert "Authorization: `Bearer ${credential.value}`" in api
