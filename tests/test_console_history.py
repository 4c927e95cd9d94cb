"""The context inspector's history in real headless Chromium (as
tests/test_console_browser.py drives it): the context as of a past moment, the changes
since it with the revision and audit entry that caused each, and a revert that shows its
impact first."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.test_console_browser import (
    Service,
    Tab,
    browser,
    console_db,
    pytestmark,
    service,
    sign_in,
    tab,
)

__all__ = ["browser", "console_db", "pytestmark", "service", "tab"]  # shared fixtures


async def _put(service: Service, path: str, body: Any) -> int:
    """The write's revision."""
    async with service.http.put(
        f"{service.url}/api/v1{path}", json=body, headers={"X-API-Key": service.admin_key}
    ) as resp:
        assert resp.status in (200, 201), await resp.text()
        return int(resp.headers["X-Revision"])


async def _a_second_later() -> str:
    """A whole second after every commit so far (the control takes seconds), once the
    clock has passed it: a write after this returns belongs to a later moment."""
    moment = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    await asyncio.sleep((moment + timedelta(milliseconds=200) - datetime.now(UTC)).total_seconds())
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


async def test_as_of_changes_since_and_revert(tab: Tab, service: Service) -> None:
    root = await service.tenant("Umbrella")
    child = await service.tenant("Umbrella Raccoon", root["id"])
    config = f"/tenants/{root['id']}/config"
    await _put(service, f"{config}/theme", {"value": "light"})
    then = await _a_second_later()
    changed = await _put(service, f"{config}/theme", {"value": "dark", "locked": True})
    await _put(service, f"{config}/seats", {"value": 10})

    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{child['id']}/context")
    theme = page.locator('table.context-config tr[data-key="theme"] code.value')
    await theme.wait_for()
    assert (await theme.text_content()) == '"dark"'

    control = page.get_by_role("form", name="Time travel")
    await control.get_by_label("Moment (UTC)").fill(then)
    await control.get_by_role("button", name="Show as of").click()
    await page.locator("p.as-of").wait_for()
    assert (await theme.text_content()) == '"light"'
    assert await page.locator('table.context-config tr[data-key="seats"]').count() == 0
    assert await page.get_by_role("button", name="Reveal sensitive values").is_disabled()
    await control.get_by_role("button", name="Now").click()
    await page.locator("p.as-of").wait_for(state="detached")
    assert (await theme.text_content()) == '"dark"'

    # What changed since then, each difference with its revision and audit entry.
    await control.get_by_label("Moment (UTC)").fill(then)
    await control.get_by_role("button", name="Changes since").click()
    rows = page.locator("table.changes-table tbody tr")
    await rows.nth(1).wait_for()
    shown = [
        (await r.get_attribute("data-key"), await r.get_attribute("data-revision"))
        for r in await rows.all()
    ]
    assert shown[0] == ("seats", str(changed + 1))
    assert shown[1] == ("theme", str(changed))
    row = page.locator('table.changes-table tr[data-key="theme"]')
    assert "changed" in (await row.locator(".badge").all_text_contents())
    await row.get_by_role("button", name="Audit entry").click()
    await row.locator(".audit-entry code", has_text="config.updated").wait_for()

    # Revert the lock: the impact first, then the revert.
    await row.get_by_role("button", name="Revert…").click()
    impact = page.get_by_role("region", name=f"Revert revision {changed}")
    await impact.locator('li[data-key="theme"]', has_text='"light"').wait_for()
    await impact.get_by_role("button", name=f"Revert revision {changed}").click()
    await page.locator(".message.success", has_text=f"Revision {changed} reverted").wait_for()
    await page.locator('table.context-config tr[data-key="theme"] code.value',
                       has_text='"light"').wait_for()  # fmt: skip
    assert (
        await page.locator('table.context-config tr[data-key="theme"] .badge.locked').count() == 0
    )
    # The changes are drawn again (the theme is back to what it was then), and the
    # confirmation stays with them rather than going with the box that said it.
    await page.locator('table.changes-table tr[data-key="theme"]').wait_for(state="detached")
    await page.locator('table.changes-table tr[data-key="seats"]').wait_for()
    confirmation = page.locator(".message.success", has_text=f"Revision {changed} reverted")
    assert await confirmation.is_visible()
    context = await service.api("GET", f"/tenants/{child['id']}/context")
    assert context["resolved_config"]["theme"]["value"] == "light"
    tab.check_clean()
