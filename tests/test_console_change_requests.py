"""The console composes change requests from the tenant page's forms ("Add to change
request" instead of save): the draft lives in the tab's sessionStorage, counted in the
header, is shown (and trimmed) on the change-request page, and submitting it answers its
impact. Scheduled requests and expiring entries are shown with the time left (real
headless Chromium, as tests/test_console_browser.py drives it)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.keys import make_key
from tests.test_console_browser import (
    Service,
    Tab,
    browser,
    console_db,
    pytestmark,
    service,
    shots,
    sign_in,
    tab,
)

__all__ = ["browser", "console_db", "pytestmark", "service", "shots", "tab"]  # shared fixtures


def later(**delta: float) -> str:
    return (datetime.now(UTC) + timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def draft_in_storage(page: Any) -> list[Any]:
    found: list[Any] = await page.evaluate(
        """() => Object.keys(sessionStorage).filter((k) => k.startsWith('tenant-console.draft.'))
            .map((k) => JSON.parse(sessionStorage.getItem(k)))"""
    )
    return found


async def test_compose_from_the_config_and_move_forms_and_submit(
    tab: Tab, service: Service
) -> None:
    root = await service.tenant("Compose root")
    child = await service.tenant("Compose child", root["id"])
    target = await service.tenant("Compose target")
    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{child['id']}")
    await page.get_by_role("heading", name="Compose child", level=2).wait_for()
    counter = page.locator("a.draft-counter")
    assert await counter.is_hidden()

    config = page.get_by_role("form", name="Set a config entry")
    await config.get_by_label("Key").fill("export.limit")
    await config.get_by_label("Value (JSON)").fill("5000")
    await config.get_by_label("Locked").check()
    await config.get_by_role("button", name="Add to change request").click()
    await page.get_by_text("Added to the change request being composed (1 change)").wait_for()
    assert (await counter.locator(".draft-count").text_content()) == "1"
    assert await counter.is_visible()

    move = page.get_by_role("form", name="Move the tenant")
    await move.locator('input[name="move-search"]').fill("Compose target")
    await move.get_by_role("button", name="Find").click()
    await move.get_by_role("button", name="Compose target", exact=True).click()
    await move.get_by_role("button", name="Add to change request").click()
    await page.get_by_text("Added to the change request being composed (2 changes)").wait_for()
    assert (await counter.locator(".draft-count").text_content()) == "2"
    # Nothing was written: the draft is only in this tab.
    assert (await service.api("GET", f"/tenants/{child['id']}"))["parent_id"] == root["id"]
    await service.api("GET", f"/tenants/{child['id']}/config/export.limit", expect=404)
    drafts = await draft_in_storage(page)
    assert drafts == [
        [
            {"op": "config.set", "tenant_id": child["id"], "key": "export.limit", "value": 5000,
             "locked": True, "sensitive": False},
            {"op": "tenant.move", "tenant_id": child["id"], "new_parent_id": target["id"]},
        ]
    ]  # fmt: skip
    assert await page.evaluate("() => localStorage.length") == 0

    # A third change, removed again on the change-request page.
    await config.get_by_label("Key").fill("theme")
    await config.get_by_label("Value (JSON)").fill('"dark"')
    await config.get_by_role("button", name="Add to change request").click()
    await counter.get_by_text("3").wait_for()
    await counter.click()
    composer = page.get_by_role("form", name="Compose a change request")
    items = composer.locator(".draft-changes li")
    await items.nth(2).wait_for()
    assert "Compose target" in (await items.nth(1).text_content() or "")
    await items.nth(2).get_by_role("button", name="Remove").click()
    await counter.get_by_text("2").wait_for()
    assert await items.count() == 2

    await composer.get_by_label("Title").fill("Lift and move")
    await composer.get_by_role("button", name="Submit for review").click()
    card = page.locator(".change-request-detail")
    await card.get_by_text("pending_approval").wait_for()
    impact = card.locator("table.impact")
    assert "Compose child" in (await impact.text_content() or "")
    await page.get_by_text(re.compile(r"Submitted for review: it affects \d+ tenant")).wait_for()
    assert await counter.is_hidden()
    assert await draft_in_storage(page) == []
    listed = await service.api("GET", "/change-requests?state=pending_approval")
    created = [cr for cr in listed["data"] if cr["title"] == "Lift and move"]
    assert len(created) == 1
    got = await service.api("GET", f"/change-requests/{created[0]['id']}")
    assert got["changes"] == drafts[0]
    assert {e["tenant_id"] for e in got["impact"]} >= {child["id"]}
    tab.check_clean()


async def test_a_draft_request_previews_its_impact_then_is_submitted(
    tab: Tab, service: Service
) -> None:
    tenant = await service.tenant("Draft preview")
    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    await page.get_by_role("heading", name="Draft preview", level=2).wait_for()
    perms = page.get_by_role("form", name="Set a permission policy")
    await perms.get_by_label("Key").fill("beta")
    await perms.get_by_label("Mode").select_option("LOCKED")
    await perms.get_by_role("button", name="Add to change request").click()
    await page.locator("a.draft-counter").click()
    composer = page.get_by_role("form", name="Compose a change request")
    await composer.locator(".draft-changes li").first.wait_for()
    await composer.get_by_label("Title").fill("Beta for all")
    await composer.get_by_role("button", name="Preview impact (save as draft)").click()
    card = page.locator(".change-request-detail")
    await card.get_by_text("draft", exact=True).wait_for()
    assert "Draft preview" in (await card.locator("table.impact").text_content() or "")
    await card.get_by_role("button", name="Submit for review").click()
    await card.get_by_text("pending_approval", exact=True).wait_for()
    tab.check_clean()


async def test_a_read_only_key_is_offered_no_change_request_action(
    tab: Tab, service: Service
) -> None:
    tenant = await service.tenant("Read only drafts")
    await service.api("PUT", f"/tenants/{tenant['id']}/config/theme", {"value": "dark"}, 201)
    reader = await make_key(service.app, ("read",), name="draft reader")
    page = await sign_in(tab, service, reader.plaintext)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    await page.locator('table.config-table tr[data-key="theme"]').wait_for()
    assert await page.get_by_role("button", name=re.compile("to change request")).count() == 0
    await page.get_by_role("link", name="Change requests").click()
    await page.get_by_role("heading", name="Scheduled").wait_for()
    assert await page.get_by_role("form", name="Compose a change request").count() == 0
    # The same page with a key that may write offers them.
    await page.get_by_role("button", name="Sign out").click()
    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    await page.locator('table.config-table tr[data-key="theme"]').wait_for()
    assert await page.get_by_role("button", name="Add to change request").count() == 5
    tab.check_clean()


async def test_expiring_entries_and_scheduled_requests_show_the_time_left(
    tab: Tab, service: Service, shots: Path
) -> None:
    tenant = await service.tenant("Expiring overrides")
    await service.api(
        "PUT", f"/tenants/{tenant['id']}/config/limit",
        {"value": 5000, "expires_at": later(hours=49, minutes=30)}, 201,
    )  # fmt: skip
    await service.api(
        "PUT", f"/tenants/{tenant['id']}/permissions/beta",
        {"value": True, "mode": "INHERIT", "expires_at": later(hours=3, minutes=30)}, 201,
    )  # fmt: skip
    await service.api("PUT", f"/tenants/{tenant['id']}/config/plain", {"value": 1}, 201)
    await service.api(
        "POST", "/change-requests",
        {"title": "Weekend limit", "description": "Black Friday",
         "apply_at": later(days=2, hours=6),
         "changes": [{"op": "config.set", "tenant_id": tenant["id"], "key": "seats",
                      "value": 50, "expires_at": later(days=5)}]},
        201,
    )  # fmt: skip
    page = tab.page
    await page.set_viewport_size({"width": 1280, "height": 900})
    await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{tenant['id']}")
    limit = page.locator('table.config-table tr[data-key="limit"] .expiry')
    await limit.wait_for()
    assert (await limit.locator(".badge").text_content()) == "expires in 2 d 1 h"
    shown = await limit.locator(".expires-at").text_content() or ""
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? UTC", shown), shown
    beta = page.locator('table.permission-table tr[data-key="beta"] .expiry .badge')
    assert re.fullmatch(r"expires in 3 h (29|30) min", await beta.text_content() or "")
    assert await page.locator('tr[data-key="plain"] .expiry').count() == 0

    # A draft beside a scheduled request, for the picture.
    config = page.get_by_role("form", name="Set a config entry")
    await config.get_by_label("Key").fill("limit")
    await config.get_by_label("Value (JSON)").fill("8000")
    await config.get_by_label("Expires at (UTC, optional)").fill("2030-01-01T00:00:00")
    await config.get_by_role("button", name="Add to change request").click()
    await page.locator("a.draft-counter").click()
    row = page.locator("table.scheduled-table tbody tr", has_text="Weekend limit")
    await row.wait_for()
    assert "in 2 d 5 h" in (await row.text_content() or "") or "in 2 d 6 h" in (
        await row.text_content() or ""
    )
    item = page.locator(".draft-changes li").first
    assert "expires 2030-01-01 00:00:00 UTC" in (await item.text_content() or "")
    await page.get_by_role("button", name="Weekend limit").first.click()
    await page.locator(".change-request-detail table.impact").wait_for()
    await page.screenshot(path=str(shots / "change-requests-1280.png"), full_page=True)
    wider = await page.evaluate("() => document.documentElement.scrollWidth > window.innerWidth")
    assert wider is False
    tab.check_clean()
