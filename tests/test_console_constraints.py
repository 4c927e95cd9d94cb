"""The console's tenant page shows the value schemas and budgets that apply, each with
the tenant that declared it, and searches "who resolves to what" in the subtree (real
headless Chromium, as tests/test_console_browser.py drives it)."""

from __future__ import annotations

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


async def test_constraints_and_who_resolves_to_what(tab: Tab, service: Service) -> None:
    root = await service.tenant("Initech")
    child = await service.tenant("Initech Oslo", root["id"])
    leaf = await service.tenant("Initech Oslo Dev", child["id"])
    await service.api("PUT", f"/tenants/{root['id']}/config/seats", {"value": 100}, 201)
    await service.api("PUT", f"/tenants/{root['id']}/config-schemas/plan",
                      {"schema": {"enum": ["free", "pro", "eu"]}}, 201)  # fmt: skip
    await service.api("PUT", f"/tenants/{root['id']}/config-budgets/seats", {}, 201)
    await service.api("PUT", f"/tenants/{child['id']}/config-schemas/plan?enforce=false",
                      {"schema": {"const": "eu"}}, 201)  # fmt: skip
    await service.api("PUT", f"/tenants/{child['id']}/config/seats", {"value": 40}, 201)
    await service.api("PUT", f"/tenants/{child['id']}/config/plan", {"value": "eu"}, 201)
    await service.api("PUT", f"/tenants/{leaf['id']}/config/plan", {"value": "pro"}, 201)

    page = await sign_in(tab, service)
    await page.goto(f"{service.url}/console#/tenants/{leaf['id']}")
    await page.get_by_role("heading", name="Initech Oslo Dev", exact=True).wait_for()
    rows = page.locator("table.constraints-table tbody tr")
    await rows.nth(2).wait_for()
    shown = [
        (
            await r.get_attribute("data-key"),
            await r.get_attribute("data-kind"),
            (await r.locator("td.declared-by").text_content() or "").strip(),
        )
        for r in await rows.all()
    ]
    assert shown == [
        ("plan", "schema", "Initech"),
        ("seats", "budget", "Initech"),
        ("plan", "schema", "Initech Oslo"),
    ]
    budget = page.locator('table.constraints-table tr[data-kind="budget"]')
    assert "40 of 100 given to children, 60 left" in (await budget.text_content() or "")
    assert await page.locator('tr[data-kind="schema"] .badge.audit').count() == 1

    # Who resolves to what, from the root's page.
    await page.goto(f"{service.url}/console#/tenants/{root['id']}")
    await page.get_by_role("heading", name="Initech", exact=True).wait_for()
    form = page.get_by_role("form", name="Who resolves to what")
    await form.get_by_label("Key").fill("plan")
    await form.get_by_label("Value (JSON, optional)").fill('"eu"')
    await form.get_by_role("button", name="Search subtree").click()
    found = page.locator("table.resolved-table tbody tr")
    await found.first.wait_for()
    assert [await r.get_attribute("data-tenant-id") for r in await found.all()] == [child["id"]]
    await form.get_by_label("Value (JSON, optional)").fill("")
    await form.get_by_role("button", name="Search subtree").click()
    await found.nth(1).wait_for()
    assert [await r.get_attribute("data-tenant-id") for r in await found.all()] == [
        child["id"],
        leaf["id"],
    ]
    tab.check_clean()
