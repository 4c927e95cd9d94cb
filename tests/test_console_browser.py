"""The admin console in real headless Chromium (Debian's, driven by Playwright).

One service on 127.0.0.1 and one browser for the module; each test gets a fresh browser
context (its own sessionStorage) and signs in by pasting a key, as a person would.
"""

from __future__ import annotations

import asyncio
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
from service.settings.options import Settings
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
        lambda msg: (
            tab.problems.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" and "status of 4" not in msg.text
            else None
        ),
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


async def sign_in(tab: Tab, service: Service, key: str | None = None) -> Any:
    page = tab.page
    await page.goto(f"{service.url}/console")
    await page.get_by_label("API key or bearer token").fill(key or service.admin_key)
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
    tab.check_clean()


async def test_create_a_root_and_a_child_lock_config_and_inspect_the_context(
    tab: Tab, service: Service, shots: Path
) -> None:
    page = await sign_in(tab, service)
    root_name, child_name = "Globex", "Globex Paris"
    home = page.get_by_role("form", name="Create a root tenant")
    await home.get_by_label("Name").fill(root_name)
    root_slug = unique_slug("globex")
    await home.get_by_label("Slug").fill(root_slug)
    await home.get_by_role("button", name="Create root tenant").click()
    await page.get_by_role("heading", name=root_name, exact=True).wait_for()
    root_id = page.url.rsplit("/", 1)[1]

    child_form = page.get_by_role("form", name="Create a child tenant")
    await child_form.get_by_label("Name").fill(child_name)
    await child_form.get_by_label("Slug").fill(unique_slug("paris"))
    await child_form.get_by_role("button", name="Create child").click()
    await page.get_by_role("heading", name=child_name, exact=True).wait_for()
    child_id = page.url.rsplit("/", 1)[1]
    child = await service.api("GET", f"/tenants/{child_id}")
    assert child["parent_id"] == root_id
    # The tree shows the child under the root, and the root's count went up.
    await page.locator(f'li[data-tenant-id="{root_id}"] li[data-tenant-id="{child_id}"]').wait_for()
    assert await row_of(page, root_id).locator(".count").text_content() == "1"

    # Before the lock the child has its own theme; another key and policies are its own.
    await service.api("PUT", f"/tenants/{child_id}/config/theme", {"value": "light"}, 201)
    await service.api("PUT", f"/tenants/{child_id}/config/currency", {"value": "EUR"}, 201)
    await service.api("PUT", f"/tenants/{root_id}/permissions/billing.view",
                      {"value": True, "mode": "LOCKED"}, 201)  # fmt: skip
    await service.api("PUT", f"/tenants/{child_id}/permissions/reports.export",
                      {"value": False, "mode": "LOCAL"}, 201)  # fmt: skip

    # Lock theme at the root through the root's page.
    await row_of(page, root_id).get_by_role("link", name=root_name).click()
    await page.get_by_role("heading", name=root_name, exact=True).wait_for()
    config_form = page.get_by_role("form", name="Set a config entry")
    await config_form.get_by_label("Key").fill("theme")
    await config_form.get_by_label("Value (JSON)").fill('"dark"')
    await config_form.get_by_label("Locked").check()
    await config_form.get_by_role("button", name="Save entry").click()
    entry = page.locator('table.config-table tr[data-key="theme"]')
    await entry.get_by_text("locked").wait_for()
    stored = await service.api("GET", f"/tenants/{root_id}/config/theme")
    assert (stored["value"], stored["locked"]) == ("dark", True)

    # Below the lock the child cannot set it, and the refusal names the ancestor.
    await page.goto(f"{service.url}/console#/tenants/{child_id}")
    await page.get_by_role("heading", name=child_name, exact=True).wait_for()
    config_form = page.get_by_role("form", name="Set a config entry")
    await config_form.get_by_label("Key").fill("theme")
    await config_form.get_by_label("Value (JSON)").fill('"pink"')
    await config_form.get_by_role("button", name="Save entry").click()
    refusal = config_form.locator("xpath=..").locator(".message.error")
    await refusal.wait_for()
    # The ancestor by name and slug, not by id.
    assert f"locked by ancestor “{root_name} ({root_slug})”" in await refusal.text_content()
    assert root_id not in await refusal.text_content()

    # The child's context: theme comes from the root, locked there, its own is shadowed.
    await page.goto(f"{service.url}/console#/tenants/{child_id}/context")
    theme = page.locator('table.context-config tr[data-key="theme"]')
    await theme.wait_for()
    assert await theme.locator("code.value").text_content() == '"dark"'
    assert await theme.locator(".source-link").text_content() == root_name
    why = await theme.locator("td.why").text_content()
    assert f"Locked at {root_name}" in why
    assert f'{child_name}: "light" (shadowed by the lock at {root_name})' in why
    currency = page.locator('table.context-config tr[data-key="currency"]')
    assert "Set here" in await currency.locator("td.why").text_content()
    billing = page.locator('table.context-permissions tr[data-key="billing.view"]')
    assert f"Locked at {root_name} (LOCKED)" in await billing.locator("td.why").text_content()
    local = page.locator('table.context-permissions tr[data-key="reports.export"]')
    assert "Set here (LOCAL)" in await local.locator("td.why").text_content()
    # Selecting the row highlights the source tenant in the tree, and only it.
    await theme.click()
    await page.locator(f'li[data-tenant-id="{root_id}"] > .node-row.source').wait_for()
    assert await page.locator(".node-row.source").count() == 1
    assert "selected" in (await row_of(page, child_id).get_attribute("class") or "")
    await page.screenshot(path=str(shots / "context-inspector.png"))
    tab.check_clean()


async def test_move_a_subtree_and_see_a_cycle_refused(
    tab: Tab, service: Service, shots: Path
) -> None:
    north = await service.tenant("North America")
    team = await service.tenant("Sales team", north["id"])
    squad = await service.tenant("Enterprise squad", team["id"])
    await service.tenant("Renewals crew", squad["id"])
    south = await service.tenant("South America")
    await service.tenant("Depot", south["id"])

    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{team['id']}")
    await page.get_by_role("heading", name=team["name"], exact=True).wait_for()
    move = page.get_by_role("form", name="Move the tenant")
    await move.get_by_placeholder("Find the new parent").fill(south["slug"])
    await move.get_by_role("button", name="Find").click()
    await move.get_by_role("button", name=south["name"]).click()
    await move.get_by_role("button", name="Move here").click()
    await page.get_by_text(f"Moved “{team['name']}” under “{south['name']}”.").wait_for()

    moved = await service.api("GET", f"/tenants/{team['id']}")
    assert moved["parent_id"] == south["id"]
    below = await service.api("GET", f"/tenants/{squad['id']}")
    assert below["ancestry_path"] == f"/{south['id']}/{team['id']}/{squad['id']}"
    # The tree follows: the subtree hangs under South now, North has no child left.
    await page.locator(
        f'li[data-tenant-id="{south["id"]}"] li[data-tenant-id="{team["id"]}"]'
    ).wait_for()
    assert await row_of(page, north["id"]).locator(".count").text_content() == "0"
    assert await row_of(page, south["id"]).locator(".count").text_content() == "2"
    await row_of(page, team["id"]).locator(".twisty").click()
    await row_of(page, squad["id"]).locator(".twisty").click()
    await page.locator(f'li[data-tenant-id="{squad["id"]}"] li[role="treeitem"]').wait_for()
    await page.screenshot(path=str(shots / "tree.png"))

    # Team's own grandchild is not offered as a new parent (the move would make a cycle).
    move = page.get_by_role("form", name="Move the tenant")
    await move.get_by_placeholder("Find the new parent").fill(squad["slug"])
    await move.get_by_role("button", name="Find").click()
    await move.get_by_role("list", name="New parent candidates").get_by_text("No match.").wait_for()
    # Asked anyway (another tab, an old link), the service refuses and the console says why.
    moved_again = await service.api(
        "POST", f"/tenants/{team['id']}/move", {"new_parent_id": squad["id"]}, expect=409
    )
    assert moved_again["error"]["code"] == "CYCLE_DETECTED"
    still = await service.api("GET", f"/tenants/{team['id']}")
    assert still["parent_id"] == south["id"]
    tab.check_clean()


async def test_retry_a_dead_delivery_retry_all_and_test_a_webhook(
    tab: Tab, service: Service, shots: Path
) -> None:
    receiver = await Receiver(always_unavailable).start()
    try:
        owner = await service.tenant("Hooked")
        hook = await service.api(
            "POST", "/webhooks",
            {"url": receiver.url, "events": ["tenant.created"], "tenant_id": owner["id"],
             "include_descendants": True, "description": "always 503"},
            expect=201,
        )  # fmt: skip
        await service.tenant("Hooked child", owner["id"])

        async def dead() -> Any:
            failed = await service.api(
                "GET", f"/webhooks/deliveries/failed?webhook_id={hook['id']}"
            )
            return failed[0] if failed else None

        delivery = await eventually(dead)
        assert receiver.for_delivery(delivery["id"])

        page = await sign_in(tab, service)
        await page.get_by_role("link", name="Webhooks").click()
        row = page.locator(f'tr[data-delivery-id="{delivery["id"]}"]')
        await row.wait_for()
        assert "HTTP 503" in await row.text_content()
        assert "1 / 1" in await row.text_content()
        hook_row = page.locator(f'tr[data-webhook-id="{hook["id"]}"]')
        assert "failed 1" in await hook_row.locator(".stats").text_content()
        assert hook["secret"] not in await page.content()
        await page.screenshot(path=str(shots / "dead-letter-queue.png"))

        await row.get_by_role("button", name="Retry").click()
        await row.get_by_text("Queued for delivery again").wait_for()
        # The worker sends it again at once (and it fails again: one attempt each time).
        await eventually(lambda: _count(receiver, delivery["id"], 2))
        await eventually(dead)

        await page.get_by_role("button", name="Refresh").click()
        retry_all = page.get_by_role("button", name="Retry all")
        await retry_all.click()
        await page.get_by_role("button", name="Confirm: retry every failed delivery").click()
        await page.get_by_text(re.compile(r"^\d+ failed deliver(y|ies) queued again\.$")).wait_for()
        await eventually(lambda: _count(receiver, delivery["id"], 3))

        await hook_row.get_by_role("button", name="Send test").click()
        result = hook_row.locator(".test-result.error")
        await result.wait_for()
        assert re.match(r"^Failed: HTTP 503 in [\d.]+ ms", await result.text_content())
        tested = [r for r in receiver.requests if r.json["event"] == "webhook.test"]
        assert len(tested) == 1
    finally:
        await receiver.close()
    tab.check_clean()


async def _count(receiver: Receiver, delivery_id: str, at_least: int) -> bool:
    return len(receiver.for_delivery(delivery_id)) >= at_least


async def test_a_tenant_named_like_html_renders_as_text(tab: Tab, service: Service) -> None:
    evil = await service.tenant(XSS_NAME)
    child = await service.tenant("<b>bold</b> child", evil["id"])
    await service.api("PUT", f"/tenants/{evil['id']}/config/banner",
                      {"value": "<script>alert(2)</script>"}, 201)  # fmt: skip
    await service.api("PATCH", f"/tenants/{evil['id']}",
                      {"metadata": {"note": "<svg onload=alert(3)>"}})  # fmt: skip
    page = await sign_in(tab, service)

    name = row_of(page, evil["id"]).locator(".node-name")
    assert await name.text_content() == XSS_NAME
    await page.get_by_label("Search tenants by slug or name").fill("img src")
    await page.get_by_role("button", name="Search", exact=True).click()
    found = page.locator(".search-results a")
    await found.first.wait_for()
    assert await found.all_text_contents() == [XSS_NAME]
    await found.first.click()
    await page.get_by_role("heading", name=XSS_NAME, exact=True).wait_for()
    banner = page.locator('table.config-table tr[data-key="banner"] code.value')
    await banner.wait_for()
    assert await banner.text_content() == '"<script>alert(2)</script>"'
    assert "<svg onload=alert(3)>" in await page.get_by_label("Metadata").input_value()
    await row_of(page, evil["id"]).locator(".twisty").click()
    assert await row_of(page, child["id"]).locator(".node-name").text_content() == (
        "<b>bold</b> child"
    )
    # Nothing the data said became markup: no image, no bold, no script, no dialog.
    counts = await page.evaluate(
        "() => ['img', 'b', 'svg', '#view script'].map((s) => document.querySelectorAll(s).length)"
    )
    assert counts == [0, 0, 0, 0]
    tab.check_clean()
    # Trusted Types are enforced: not even the page's own script could write HTML.
    refused = await page.evaluate(
        """() => {
            try { document.createElement("div").innerHTML = "<b>x</b>"; return false; }
            catch (err) { return err instanceof TypeError; }
        }"""
    )
    assert refused is True


async def test_archive_restore_and_archived_tenants_on_request(tab: Tab, service: Service) -> None:
    parent = await service.tenant("Archive parent")
    leaf = await service.tenant("Archive leaf", parent["id"])
    page = await sign_in(tab, service)

    await page.goto(f"{service.url}/console#/tenants/{parent['id']}")
    await page.get_by_role("heading", name=parent["name"], exact=True).wait_for()
    await page.get_by_role("button", name="Archive", exact=True).click()
    await page.get_by_role("button", name="Confirm archive").click()
    await page.get_by_text("Archive or move its active children first. (HAS_CHILDREN)").wait_for()

    await row_of(page, parent["id"]).locator(".twisty").click()
    await row_of(page, leaf["id"]).get_by_role("link").click()
    await page.get_by_role("heading", name=leaf["name"], exact=True).wait_for()
    await page.get_by_role("button", name="Archive", exact=True).click()
    await page.get_by_role("button", name="Confirm archive").click()
    await page.get_by_text(f"Archived “{leaf['name']}”.").wait_for()
    assert (await service.api("GET", f"/tenants/{leaf['id']}?include_archived=true"))[
        "status"
    ] == "archived"
    # Hidden from the tree until archived tenants are asked for.
    await row_of(page, leaf["id"]).wait_for(state="detached")
    assert await row_of(page, parent["id"]).locator(".count").text_content() == "0"
    await page.get_by_label("Show archived tenants").check()
    await row_of(page, parent["id"]).locator(".twisty").click()
    archived_row = row_of(page, leaf["id"])
    await archived_row.get_by_text("archived").wait_for()
    assert await row_of(page, parent["id"]).locator(".count").text_content() == "1"

    await archived_row.get_by_role("link").click()
    await page.get_by_text("Archived: restore the tenant to see and change its config.").wait_for()
    await page.get_by_role("button", name="Restore", exact=True).click()
    await page.get_by_text(f"Restored “{leaf['name']}”.").wait_for()
    restored = await service.api("GET", f"/tenants/{leaf['id']}")
    assert (restored["status"], restored["deleted_at"]) == ("active", None)
    tab.check_clean()


async def test_edit_name_and_metadata_and_reveal_a_secret_on_purpose(
    tab: Tab, service: Service
) -> None:
    tenant = await service.tenant("Before rename")
    metadata = {"tier": "gold", "owner": {"name": "Ana", "team": "ops"}}
    await service.api("PATCH", f"/tenants/{tenant['id']}", {"metadata": metadata})
    await service.api("PUT", f"/tenants/{tenant['id']}/config/db_password",
                      {"value": "hunter2-secret", "sensitive": True}, 201)  # fmt: skip
    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    await page.get_by_role("heading", name="Before rename", exact=True).wait_for()

    secret = page.locator('table.config-table tr[data-key="db_password"]')
    await secret.wait_for()
    assert await secret.locator("code.value").text_content() == '"***"'
    assert "hunter2-secret" not in await page.content()
    await secret.get_by_role("button", name="Reveal").click()
    await secret.get_by_text('"hunter2-secret"').wait_for()
    await secret.get_by_role("button", name="Hide").click()
    await secret.get_by_text('"***"').wait_for()
    assert "hunter2-secret" not in await page.content()

    edit = page.get_by_role("form", name="Edit the tenant")
    await edit.get_by_label("Name").fill("After rename")
    await edit.get_by_label("Metadata").fill('{"tier": "platinum", "owner": {"name": "Ana"}}')
    await edit.get_by_role("button", name="Save changes").click()
    await page.get_by_role("heading", name="After rename", exact=True).wait_for()
    saved = await service.api("GET", f"/tenants/{tenant['id']}")
    assert saved["name"] == "After rename"
    assert saved["metadata"] == {"tier": "platinum", "owner": {"name": "Ana"}}
    assert await row_of(page, tenant["id"]).locator(".node-name").text_content() == "After rename"
    tab.check_clean()


async def test_audit_page_filters_and_pages(tab: Tab, service: Service) -> None:
    tenant = await service.tenant("Audited")
    for i in range(26):
        await service.api("PUT", f"/tenants/{tenant['id']}/config/k{i}", {"value": i}, 201)
    page = await sign_in(tab, service)
    await page.get_by_role("link", name="Audit log").click()
    loaded = page.locator('.audit-results[aria-busy="false"]')
    await loaded.wait_for()
    form = page.get_by_role("form", name="Audit log filters")
    await form.get_by_label("Tenant").fill(tenant["id"])
    await form.get_by_label("Per page").select_option("25")
    await form.get_by_role("button", name="Apply filters").click()
    await loaded.wait_for()
    rows = page.locator("table.audit-table tbody tr")
    # Newest first: 26 config changes, then the tenant's creation on the second page.
    first_page = await rows.all_text_contents()
    assert len(first_page) == 25
    assert all("config.updated" in row and "Audited" in row for row in first_page)
    # The actor is the key by its name, not its id.
    assert all("key console admin" in row for row in first_page), first_page[0]
    await page.get_by_role("button", name="Next page").click()
    await loaded.wait_for()
    await page.get_by_text("Page 2").wait_for()
    second_page = await rows.all_text_contents()
    assert len(second_page) == 2
    assert "config.updated" in second_page[0]
    assert "tenant.created" in second_page[1]
    await rows.last.get_by_role("button", name="Changes").click()
    changes = page.locator(".audit-detail pre")
    await changes.wait_for()
    assert tenant["slug"] in await changes.text_content()
    await page.get_by_role("button", name="Previous page").click()
    await loaded.wait_for()
    await page.get_by_text("Page 1").wait_for()
    assert await rows.all_text_contents() == first_page
    await form.get_by_label("Action").fill("tenant.created")
    await form.get_by_role("button", name="Apply filters").click()
    await loaded.wait_for()
    only = await rows.all_text_contents()
    assert len(only) == 1
    assert "tenant.created" in only[0]
    tab.check_clean()


async def test_a_large_family_pages_in_the_tree(tab: Tab, service: Service) -> None:
    parent = await service.tenant("Big family")
    items = [{"name": f"Kid {i:03}", "slug": unique_slug("kid"), "parent_id": parent["id"]}
             for i in range(100)]  # fmt: skip
    await service.api("POST", "/tenants/batch", {"tenants": items}, expect=201)
    last = await service.tenant("Kid 100", parent["id"])
    page = await sign_in(tab, service)
    assert await row_of(page, parent["id"]).locator(".count").text_content() == "101"

    # Opening the 101st child reveals it: the tree fetches the second page of children.
    await page.goto(f"{service.url}/console#/tenants/{last['id']}")
    await page.get_by_role("heading", name="Kid 100", exact=True).wait_for()
    selected = page.locator(f'li[data-tenant-id="{last["id"]}"] > .node-row.selected')
    await selected.wait_for()
    children = page.locator(f'li[data-tenant-id="{parent["id"]}"] > ul > li[role="treeitem"]')
    assert await children.count() == 101
    tab.check_clean()


async def test_the_header_names_the_key_and_its_scopes(tab: Tab, service: Service) -> None:
    page = await sign_in(tab, service)
    identity = page.locator("#identity")
    await identity.get_by_text("console admin").wait_for()
    assert await identity.text_content() == (
        f"console admin ({service.admin_key[:12]}…) · admin, read, write"
    )
    nav = page.get_by_role("navigation", name="Sections")
    assert await nav.get_by_role("link").all_text_contents() == [
        "Tenants", "Webhooks", "Change requests", "Audit log",
    ]  # fmt: skip
    # A key without admin is told so, and is not offered the audit log.
    reader = await make_key(service.app, ("read",), name="console reader")
    await page.get_by_role("button", name="Sign out").click()
    page = await sign_in(tab, service, reader.plaintext)
    await identity.get_by_text("console reader").wait_for()
    assert await identity.text_content() == f"console reader ({reader.plaintext[:12]}…) · read"
    assert await nav.get_by_role("link").all_text_contents() == [
        "Tenants", "Webhooks", "Change requests",
    ]  # fmt: skip
    await page.goto(f"{service.url}/console#/audit")
    await page.get_by_text("This credential cannot use the audit log").wait_for()
    tab.check_clean()


async def test_notices_go_away_and_never_cover_controls(tab: Tab, service: Service) -> None:
    page = await sign_in(tab, service)
    home = page.get_by_role("form", name="Create a root tenant")
    await home.get_by_label("Name").fill("Noticed")
    await home.get_by_label("Slug").fill(unique_slug("noticed"))
    await home.get_by_role("button", name="Create root tenant").click()
    notice = page.locator(".notice.visible")
    await notice.get_by_text("Created root “Noticed”.").wait_for()
    covered = await page.evaluate(
        """() => {
            const box = document.querySelector(".notice.visible").getBoundingClientRect();
            const hits = [];
            for (const el of document.querySelectorAll("button, a, input, select, textarea")) {
                if (el.closest(".notices")) continue;
                const r = el.getBoundingClientRect();
                if (!r.width || !r.height) continue;
                const apart = r.right <= box.left || box.right <= r.left
                    || r.bottom <= box.top || box.bottom <= r.top;
                if (!apart) hits.push(el.outerHTML.slice(0, 80));
            }
            return hits;
        }"""
    )
    assert covered == []
    await notice.wait_for(state="hidden", timeout=10_000)  # by itself, after 4 s
    tab.check_clean()


async def test_retry_all_is_offered_only_when_something_failed(tab: Tab, service: Service) -> None:
    page = tab.page

    async def empty_queue(route: Any) -> None:
        await route.fulfill(status=200, content_type="application/json", body="[]")

    await page.route("**/api/v1/webhooks/deliveries/failed*", empty_queue)
    page = await sign_in(tab, service)
    await page.get_by_role("link", name="Webhooks").click()
    await page.get_by_text("The dead-letter queue is empty.").wait_for()
    assert await page.get_by_role("button", name="Retry all").count() == 0
    await page.unroute("**/api/v1/webhooks/deliveries/failed*")
    tab.check_clean()


async def test_a_burst_of_clicks_survives_rate_limits(tab: Tab, service: Service) -> None:
    """One page view costs a few API calls: a key with a small limit clicked briskly gets
    429s. The console waits them out (Retry-After) with a note and ends on the page the
    user went to last, never on a blank "too many requests"."""
    owner = await service.tenant("Throttled")
    limited = await make_key(
        service.app, name="slow key", rate_limit_max=6, rate_limit_window="3 seconds",
        rate_limit_window_seconds=3,
    )  # fmt: skip
    page = await sign_in(tab, service, limited.plaintext)
    throttled = page.locator(".throttle:not([hidden])")
    seen = asyncio.ensure_future(
        page.wait_for_function(
            "() => { const t = document.querySelector('.throttle'); "
            "return t && !t.hidden && t.textContent; }",
            timeout=30_000,
        )
    )
    for target in ["#/webhooks", f"#/tenants/{owner['id']}", "#/", "#/webhooks"] * 3:
        await page.evaluate("(hash) => { window.location.hash = hash; }", target)
    note = await seen  # the note showed while the console waited
    assert (await note.json_value()).startswith(
        "The service asked to slow down (too many requests): retrying in "
    )
    await page.get_by_role("heading", name="Webhooks", exact=True, level=2).wait_for(timeout=60_000)
    await page.locator("section[aria-labelledby='dlq-title'] .empty, table.dead-letter-table"
                       ).first.wait_for(timeout=60_000)  # fmt: skip
    await throttled.wait_for(state="hidden", timeout=60_000)
    text = await page.locator("#view").text_content()
    assert "RATE_LIMITED" not in text
    assert "too many requests" not in text.lower()
    # Still signed in, on the page last asked for.
    assert page.url.endswith("#/webhooks")
    await page.get_by_role("button", name="Sign out").wait_for()
    tab.check_clean()


async def test_review_and_apply_a_change_request(tab: Tab, service: Service) -> None:
    tenant = await service.tenant("Reseller")
    proposed = await service.api(
        "POST",
        "/change-requests",
        {
            "title": "Lift the limit",
            "changes": [
                {"op": "config.set", "tenant_id": tenant["id"], "key": "limit", "value": 5000},
            ],
        },
        201,
    )
    reviewer = await make_key(service.app, ("read", "write"), name="console reviewer")
    page = await sign_in(tab, service, reviewer.plaintext)
    await page.get_by_role("link", name="Change requests").click()
    await page.get_by_role("button", name="Lift the limit").click()
    card = page.locator(".change-request-detail")
    await card.get_by_text("pending_approval").wait_for()
    assert tenant["id"] in await card.locator("table.impact").text_content()
    await card.get_by_role("button", name="Approve").click()
    await card.get_by_text("approved", exact=True).wait_for()
    apply = card.get_by_role("button", name="Apply now")
    await apply.click()
    await card.get_by_role("button", name="Apply: sure?").click()
    await card.get_by_text("applied", exact=True).wait_for()
    entry = await service.api("GET", f"/tenants/{tenant['id']}/config/limit")
    assert entry["value"] == 5000
    got = await service.api("GET", f"/change-requests/{proposed['id']}")
    assert got["state"] == "applied"
    tab.check_clean()
