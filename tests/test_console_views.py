"""The console as a new user meets it, in headless Chromium: the webhooks page at 1280 px,
tenants named (and slugged) rather than shortened ids, a read-only key offered no edit
form, a move's choices and confirmation, and a console that backs off as one after a 429
and drops what belonged to a page left. Fixtures come from tests/test_console_browser.py
(a service of this module's own, one browser, a fresh context per test)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import browser as chromium
from tests.support.keys import make_key
from tests.test_console_browser import (
    Service,
    Tab,
    browser,
    console_db,
    service,
    shots,
    sign_in,
    tab,
)

# That module's fixtures, used here by name (pytest finds them in this module's names).
FIXTURES = (browser, console_db, service, shots, tab)

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(chromium.skip_reason() is not None, reason=chromium.skip_reason() or ""),
]
LONG_PATH = "/hooks/tenant-events/" + "a1b2c3d4e5" * 6


async def test_the_webhooks_page_fits_1280_pixels(tab: Tab, service: Service, shots: Path) -> None:
    owner = await service.tenant("Webhook owner")
    for n in range(2):
        await service.api(
            "POST", "/webhooks",
            {"url": f"http://127.0.0.1:9/{n}{LONG_PATH}", "events": ["tenant.created"],
             "tenant_id": owner["id"], "description": "a long address"},
            expect=201,
        )  # fmt: skip
    page = tab.page
    await page.set_viewport_size({"width": 1280, "height": 900})
    await sign_in(tab, service)
    await page.get_by_role("link", name="Webhooks").click()
    table = page.locator("table.webhook-table")
    await table.wait_for()
    # The date box has a label one can see and click, not only a hidden name.
    since = page.get_by_label("Recover failed deliveries since").first
    await since.wait_for()
    labelled = await since.evaluate("(el) => el.closest('label')?.textContent || ''")
    assert "Recover failed deliveries since" in labelled
    await page.screenshot(path=str(shots / "webhooks-1280.png"), full_page=True)
    facts = await page.evaluate(
        """() => {
            const out = (inner, outer) =>
                inner.left < outer.left - 1 || inner.right > outer.right + 1;
            const cards = [...document.querySelectorAll('#view .card')];
            const urls = [...document.querySelectorAll('table.webhook-table code.url')];
            return {
                pageWider: document.documentElement.scrollWidth > window.innerWidth,
                cardsOverflowing: cards.filter((c) => c.scrollWidth > c.clientWidth + 1).length,
                controlsOutside: [...document.querySelectorAll('.recover')].filter((r) => out(
                    r.getBoundingClientRect(), r.closest('.card').getBoundingClientRect())).length,
                narrowestUrl: Math.min(...urls.map((u) => u.getBoundingClientRect().width)),
            };
        }"""
    )
    assert facts["pageWider"] is False, facts
    assert facts["cardsOverflowing"] == 0, facts
    assert facts["controlsOutside"] == 0, facts
    assert facts["narrowestUrl"] >= 200, facts  # not a few characters per line
    tab.check_clean()


async def test_a_read_only_key_is_offered_no_edit_form(tab: Tab, service: Service) -> None:
    tenant = await service.tenant("Read only view")
    await service.api("PUT", f"/tenants/{tenant['id']}/config/theme", {"value": "dark"}, 201)
    reader = await make_key(service.app, ("read",), name="console reader")
    page = await sign_in(tab, service, reader.plaintext)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    await page.get_by_role("heading", name="Read only view", level=2).wait_for()
    await page.locator('table.config-table tr[data-key="theme"]').wait_for()
    for form in ("Edit the tenant", "Create a child tenant", "Move the tenant",
                 "Set a config entry", "Set a permission policy"):  # fmt: skip
        assert await page.get_by_role("form", name=form).count() == 0, form
    for button in ("Archive", "Delete", "Edit", "Save changes"):
        assert await page.get_by_role("button", name=button, exact=True).count() == 0, button
    await page.get_by_text("This credential can read only").wait_for()
    # The same page with a key that may write offers them.
    await page.get_by_role("button", name="Sign out").click()
    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    await page.get_by_role("form", name="Edit the tenant").wait_for()
    await page.get_by_role("button", name="Archive", exact=True).wait_for()
    tab.check_clean()


async def test_previews_and_the_audit_log_name_tenants(tab: Tab, service: Service) -> None:
    """Ids made in the same minute share their first characters: the console shows the
    name and slug, with the whole id on hover."""
    root = await service.tenant("Preview root")
    child = await service.tenant("Preview child", root["id"])
    grandchild = await service.tenant("Preview grandchild", child["id"])
    page = await sign_in(tab, service)
    # The config preview of the root lists the descendants whose value would change.
    await page.goto(f"{service.url}/console#/tenants/{root['id']}")
    await page.get_by_role("heading", name="Preview root", exact=True).wait_for()
    form = page.get_by_role("form", name="Set a config entry")
    await form.get_by_label("Key").fill("plan")
    await form.get_by_label("Value (JSON)").fill('"gold"')
    await form.get_by_role("button", name="Preview impact").click()
    impact = page.locator(".impact-list").first
    await impact.wait_for()
    refs = impact.locator("a.tenant-ref")
    texts = await refs.all_text_contents()
    assert f"Preview grandchild ({grandchild['slug']})" in texts, texts
    titles = await refs.evaluate_all("(links) => links.map((a) => a.title)")
    assert grandchild["id"] in titles
    # The audit log: the tenant column and a tenant resource by name and slug.
    await page.goto(f"{service.url}/console#/audit")
    await page.locator("table.audit-table").wait_for()
    created = page.locator("table.audit-table tr", has_text="tenant.created").filter(
        has_text=f"Preview grandchild ({grandchild['slug']})"
    )
    await created.first.wait_for()
    assert grandchild["id"][:8] + "…" not in await page.locator("#view").text_content()
    tab.check_clean()


async def test_find_leaves_out_the_tenant_and_its_subtree(tab: Tab, service: Service) -> None:
    mover = await service.tenant("Findme mover")
    inside = await service.tenant("Findme inside", mover["id"])
    elsewhere = await service.tenant("Findme elsewhere")
    page = await sign_in(tab, service)
    await page.set_viewport_size({"width": 1280, "height": 700})
    await page.goto(f"{service.url}/console#/tenants/{mover['id']}")
    await page.get_by_role("heading", name="Findme mover", exact=True).wait_for()
    await page.locator(
        'section[aria-labelledby="config-title"] table, '
        'section[aria-labelledby="config-title"] .empty'
    ).first.wait_for()
    form = page.get_by_role("form", name="Move the tenant")
    await form.get_by_placeholder("Find the new parent by slug or name").fill("Findme")
    await form.get_by_role("button", name="Find").click()
    candidates = form.get_by_role("list", name="New parent candidates")
    await candidates.get_by_role("button", name="Findme elsewhere").wait_for()
    names = await candidates.get_by_role("button").all_text_contents()
    assert names == ["Findme elsewhere"], (names, inside["id"], elsewhere["id"])
    await candidates.get_by_role("button", name="Findme elsewhere").click()
    move_here = form.get_by_role("button", name="Move here")
    await page.wait_for_function(
        """() => {
            const b = [...document.querySelectorAll('button')]
                .find((x) => x.textContent === 'Move here');
            if (!b) return false;
            const r = b.getBoundingClientRect();
            return !b.disabled && r.top >= 0 && r.bottom <= window.innerHeight;
        }"""
    )
    assert await move_here.is_enabled()
    tab.check_clean()


async def test_after_a_429_the_console_backs_off_as_one(tab: Tab, service: Service) -> None:
    """A key limited to 12 requests per 20 s, clicked through several tenants: after a
    429 no request goes out before its Retry-After, and nothing of a page left is asked
    for again; the page last asked for is shown."""
    tenants = [await service.tenant(f"Backoff {n}") for n in range(4)]
    limited = await make_key(
        service.app, name="backoff key", rate_limit_max=12, rate_limit_window="20 seconds",
        rate_limit_window_seconds=20,
    )  # fmt: skip
    page = await sign_in(tab, service, limited.plaintext)
    sent: list[tuple[float, str]] = []
    refused: list[tuple[float, int]] = []

    def on_request(request: Any) -> None:
        if "/api/v1/" in request.url:
            sent.append((time.monotonic(), request.url))

    def on_response(response: Any) -> None:
        # Timed as it arrives, like the requests: a task scheduled for later read the
        # clock late on a loaded machine and flagged requests sent after the wait.
        if response.status == 429:
            refused.append((time.monotonic(), int(response.headers.get("retry-after", "1"))))

    page.on("request", on_request)
    page.on("response", on_response)
    for tenant in tenants * 2:
        await page.evaluate("(h) => { window.location.hash = h; }", f"#/tenants/{tenant['id']}")
        await asyncio.sleep(0.05)
    last = tenants[-1]
    left_at = time.monotonic()
    await page.get_by_role("heading", name=last["name"], level=2).wait_for(timeout=60_000)
    await page.locator('section[aria-labelledby="config-title"]').wait_for(timeout=60_000)
    assert refused, "the key's limit was never reached: the test proves nothing"
    # Backed off together: nothing was sent while a Retry-After ran (150 ms of slack for
    # the two clocks).
    for at, seconds in refused:
        early = [url for when, url in sent if at + 0.15 < when < at + seconds - 0.15]
        assert early == [], (seconds, early)
    # Nothing of the pages left was asked for after the last navigation.
    others = [t["id"] for t in tenants[:-1]]
    late = [url for when, url in sent if when > left_at and any(
        url.split("?")[0].endswith((f"/tenants/{i}", f"/tenants/{i}/config",
                                    f"/tenants/{i}/permissions")) for i in others)]  # fmt: skip
    assert late == [], late
    assert page.url.endswith(f"#/tenants/{last['id']}")
    text = await page.locator("#view").text_content()
    assert "RATE_LIMITED" not in text
    tab.check_clean()
