"""The admin console in real headless Chromium (Debian's, driven by Playwright).

One service on 127.0.0.1 and one browser for the module; each test gets a fresh browser
context (its own sessionStorage) and signs in by pasting a key, as a person would.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from service.app import create_app
from service.config import Settings
from service.webhooks.sender import WebhookNetwork
from tests.conftest import base_env
from tests.support import browser as chromium
from tests.support.api import unique_slug
from tests.support.databases import create_database, drop_database
from tests.support.keys import make_key
from tests.support.webhooks import ConnectionLog, Receiver, always_unavailable, eventually

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(chromium.skip_reason() is not None, reason=chromium.skip_reason() or ""),
]
XSS_NAME = "<img src=x onerror=alert(1)>"
TIMEOUT_MS = 15_000


@dataclass
class Service:
    url: str
    app: web.Application
    admin_key: str
    http: aiohttp.ClientSession

    async def api(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        async with self.http.request(
            method, f"{self.url}/api/v1{path}", json=body, headers={"X-API-Key": self.admin_key}
        ) as resp:
            data = await resp.json() if resp.status != 204 else None
            assert resp.status == expect, data
            return data

    async def tenant(self, name: str, parent_id: str | None = None) -> dict[str, Any]:
        body = {"name": name, "slug": unique_slug("c"), "parent_id": parent_id}
        created: dict[str, Any] = await self.api("POST", "/tenants", body, expect=201)
        return created


@dataclass
class Tab:
    """A page plus everything that went wrong in it (JS errors, CSP reports, dialogs)."""

    page: Any
    problems: list[str] = field(default_factory=list)

    def check_clean(self) -> None:
        assert self.problems == [], self.problems


@pytest.fixture(scope="module")
def console_db(admin_dsn: str, template_db: str) -> Any:
    dsn = create_database(admin_dsn, template_db)
    yield dsn
    drop_database(admin_dsn, dsn)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(console_db: str, tmp_path_factory: Any) -> AsyncIterator[Service]:
    # Dead letters after one failed attempt, to a receiver on 127.0.0.1 only.
    settings = Settings.from_env(
        base_env(
            console_db,
            tmp_path_factory.mktemp("console"),
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_MAX_ATTEMPTS="1",
            WEBHOOK_TIMEOUT_SECONDS="2",
        )
    )
    app = create_app(settings, webhook_network=WebhookNetwork(socket_factory=ConnectionLog()))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    issued = await make_key(app, name="console admin")
    async with aiohttp.ClientSession() as http:
        yield Service(f"http://127.0.0.1:{port}", app, issued.plaintext, http)
    await runner.cleanup()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium.chromium_path(), args=chromium.LAUNCH_ARGS
        )
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def tab(browser: Any) -> AsyncIterator[Tab]:
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    tab = Tab(page)
    page.on("pageerror", lambda exc: tab.problems.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda msg: tab.problems.append(f"console {msg.type}: {msg.text}")
        if msg.type == "error" and "status of 4" not in msg.text
        else None,
    )

    async def dialog(d: Any) -> None:
        tab.problems.append(f"dialog: {d.message}")
        await d.dismiss()

    page.on("dialog", dialog)
    yield tab
    await context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: Any) -> Path:
    return chromium.screenshot_dir(tmp_path_factory.mktemp("screenshots"))


async def sign_in(tab: Tab, service: Service) -> Any:
    page = tab.page
    await page.goto(f"{service.url}/console")
    await page.get_by_label("API key or bearer token").fill(service.admin_key)
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("button", name="Sign out").wait_for()
    return page


def row_of(page: Any, tenant_id: str) -> Any:
    return page.locator(f'li[data-tenant-id="{tenant_id}"] > .node-row')


async def test_sign_in_keeps_the_key_in_session_storage_only(tab: Tab, service: Service) -> None:
    page = await sign_in(tab, service)
    assert service.admin_key not in page.url
    stored = await page.evaluate("() => JSON.stringify(sessionStorage)")
    assert service.admin_key in stored
    assert await page.evaluate("() => localStorage.length") == 0
    assert await page.evaluate("() => document.cookie") == ""
    assert service.admin_key not in await page.content()
    await page.get_by_role("button", name="Sign out").click()
    await page.get_by_label("API key or bearer token").wait_for()
    assert await page.evaluate("() => sessionStorage.length") == 0
    # A wrong key is refused and not kept.
    await page.get_by_label("API key or bearer token").fill("sk_test_wrong")
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_text(re.compile("Sign-in refused")).wait_for()
    assert await page.evaluate("() => sessionStorage.length") == 0
    tab.problems.clear()  # the refused key logged its 401 in the console, as browsers do


async def test_smoke_screens(tab: Tab, service: Service, shots: Path) -> None:
    root = await service.tenant("Acme")
    await service.tenant("Acme EU", root["id"])
    page = await sign_in(tab, service)
    await row_of(page, root["id"]).wait_for()
    await page.screenshot(path=str(shots / "tree.png"))
    tab.check_clean()
