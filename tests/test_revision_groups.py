"""The revision log's groups (migration 0051): the tenants below a changed entry are one
row per changed subtree, and every reader still sees one position per tenant, in order,
exactly once, whatever page size cuts through a group and wherever the subscriber's
root and scope lie against the group's anchor."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from service.auth.principal import Principal
from service.db.queries import Queries
from service.http.appkeys import DATABASE, REPOSITORIES, USE_CASES
from service.usecases.tenants.context_delivery import LAST_INDEX, Subscription
from tests.support.api import create_tenant, move
from tests.support.plans import nodes


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    return fresh_db_url


async def _tree(client: Any, admin: dict[str, str]) -> dict[str, dict[str, Any]]:
    """T > (A > (A1 > A11, A2), B > B1), and U beside T."""
    t: dict[str, dict[str, Any]] = {}
    t["T"] = await create_tenant(client, admin)
    t["U"] = await create_tenant(client, admin)
    for name, parent in (("A", "T"), ("B", "T"), ("A1", "A"), ("A2", "A"), ("A11", "A1"),
                         ("B1", "B")):  # fmt: skip
        t[name] = await create_tenant(client, admin, parent_id=t[parent]["id"])
    return t


async def _revision(db_conn: Any) -> int:
    return int(await db_conn.fetchval("SELECT max(revision) FROM context_revisions"))


async def _write_entries(db_conn: Any, *tenant_ids: str) -> int:
    async with db_conn.transaction():
        for tenant_id in tenant_ids:
            await db_conn.execute(
                "INSERT INTO config_entries (tenant_id, key, value) VALUES ($1, 'k', '1')",
                UUID(tenant_id),
            )
    return await _revision(db_conn)


def _nearest_first(t: dict[str, dict[str, Any]], names: list[str]) -> list[str]:
    """A group's order: by depth below its anchor, then by id."""
    return [t[n]["id"] for n in sorted(names, key=lambda n: (t[n]["depth"], t[n]["id"]))]


def _by_path(t: dict[str, dict[str, Any]], names: list[str]) -> list[str]:
    return [t[n]["id"] for n in sorted(names, key=lambda n: t[n]["ancestry_path"])]


async def test_a_write_logs_the_tenants_below_as_one_group_in_path_order(
    client, admin, db_conn
) -> None:
    t = await _tree(client, admin)
    revision = await _write_entries(db_conn, t["T"]["id"])
    rows = await db_conn.fetch(
        "SELECT idx, tenant_id, change, path, members FROM context_revision_tenants"
        " WHERE revision = $1 ORDER BY idx",
        revision,
    )
    below = ["A", "A1", "A11", "A2", "B", "B1"]
    assert [(r["idx"], str(r["tenant_id"]), r["change"]) for r in rows] == [
        (0, t["T"]["id"], "context"),
        (1, t["T"]["id"], "below"),
    ]
    assert [str(m) for m in rows[1]["members"]] == _nearest_first(t, below)
    assert rows[1]["path"] == t["T"]["ancestry_path"]
    count = await db_conn.fetchval(
        "SELECT tenant_count FROM context_revisions WHERE revision = $1", revision
    )
    assert count == 7
    # Read back: one position per tenant, the written one first, then the group (a
    # parent before its children).
    repo = client.app[REPOSITORIES].revisions
    logged = await client.app[DATABASE].run(lambda c: repo.list_revision_tenants(c, revision))
    assert [(r.idx, str(r.tenant_id), r.change, r.path) for r in logged] == [
        (i, tenant_id, "context", path)
        for i, (tenant_id, path) in enumerate(
            [(t["T"]["id"], t["T"]["ancestry_path"])]
            + [(t[n]["id"], t[n]["ancestry_path"])
               for n in sorted(below, key=lambda n: (t[n]["depth"], t[n]["id"]))]
        )
    ]  # fmt: skip


async def test_a_write_above_and_below_in_one_transaction_logs_each_tenant_once(
    client, admin, db_conn
) -> None:
    t = await _tree(client, admin)
    revision = await _write_entries(db_conn, t["A1"]["id"], t["T"]["id"], t["U"]["id"])
    repo = client.app[REPOSITORIES].revisions
    logged = await client.app[DATABASE].run(lambda c: repo.list_revision_tenants(c, revision))
    ids = [str(r.tenant_id) for r in logged]
    # The written tenants first (path order), then the one group: A1's subtree lies in
    # T's, so A11 is there once; U has nothing below it.
    written = _by_path(t, ["T", "A1", "U"])
    assert ids == written + _nearest_first(t, ["A", "A11", "A2", "B", "B1"])
    assert [r.idx for r in logged] == list(range(len(ids)))
    groups = await db_conn.fetchval(
        "SELECT count(*) FROM context_revision_tenants WHERE revision = $1 AND change = 'below'",
        revision,
    )
    assert groups == 1


async def _pages(
    client: Any, subscription: Subscription, after: tuple[int, int], size: int
) -> list[tuple[str, str, str]]:
    """Every event after `after`, page by page of `size` log rows: (id, name, tenant)."""
    delivery = client.app[USE_CASES].context_delivery
    events: list[tuple[str, str, str]] = []
    while True:
        page = await delivery.page(subscription, after, size)
        events += [(e.id, e.name, e.data.split('"tenant_id":"')[1][:36]) for e in page.events]
        assert page.after > after or page.caught_up
        after = page.after
        if page.caught_up:
            return events


@pytest.mark.parametrize("root_name", ["T", "A", "A1"])
async def test_pages_of_any_size_give_each_tenant_once_wherever_the_root_lies(
    client, admin, db_conn, root_name: str
) -> None:
    """Roots at the anchor (the group is inside) and below it (the group's anchor is
    above: only the members inside the root now); a scoped caller the same."""
    t = await _tree(client, admin)
    start = await _revision(db_conn)
    await _write_entries(db_conn, t["T"]["id"])
    await _write_entries(db_conn, t["A"]["id"], t["B1"]["id"])
    root = UUID(t[root_name]["id"])
    inside = [n for n in t if f"/{root}" in t[n]["ancestry_path"]]
    admin_principal = Principal("test", "api_key", frozenset({"read"}))
    scoped = Principal("test", "api_key", frozenset({"read"}), tenant_id=UUID(t["A"]["id"]))
    for principal in (admin_principal, scoped):
        subscription = Subscription(root, principal.tenant_id, principal)
        whole = await _pages(client, subscription, (start, LAST_INDEX), 10_000)
        visible = {t[n]["id"] for n in inside if principal.can_see_path(t[n]["ancestry_path"])}
        # Each revision: every visible tenant of the subtree its change reached, once.
        by_revision: dict[int, list[str]] = {}
        for event_id, name, tenant in whole:
            assert name == "context"
            by_revision.setdefault(int(event_id.split(":")[0]), []).append(tenant)
        first, second = sorted(by_revision)
        assert sorted(by_revision[first]) == sorted(visible)
        reached = {t[n]["id"] for n in ("A", "A1", "A11", "A2", "B1")} & visible
        assert sorted(by_revision[second]) == sorted(reached)
        for size in (1, 2, 3):
            assert await _pages(client, subscription, (start, LAST_INDEX), size) == whole
        # Resuming after any event gives the rest.
        for i, (event_id, _, _) in enumerate(whole):
            revision, idx = (int(part) for part in event_id.split(":"))
            assert await _pages(client, subscription, (revision, idx), 2) == whole[i + 1 :]


async def test_a_tenant_moved_out_after_a_group_is_only_removed(client, admin, db_conn) -> None:
    """A group anchored above the root keeps its members' paths out of the log: a member
    that has left the root since gets no context event for the old revision, and its
    move's removal follows."""
    t = await _tree(client, admin)
    start = await _revision(db_conn)
    await _write_entries(db_conn, t["T"]["id"])
    await move(client, admin, t["A1"]["id"], t["U"]["id"])
    principal = Principal("test", "api_key", frozenset({"read"}))
    subscription = Subscription(UUID(t["A"]["id"]), None, principal)
    events = await _pages(client, subscription, (start, LAST_INDEX), 2)
    a1, a11 = t["A1"]["id"], t["A11"]["id"]
    assert [(name, tenant) for _, name, tenant in events] == [
        ("context", t["A"]["id"]),
        ("context", t["A2"]["id"]),
        ("removed", a1),
        ("removed", a11),
    ]


async def test_a_page_reads_the_log_from_the_position_and_stops(db_conn) -> None:
    """EXPLAIN over 20,000 revisions of a noted row and a group of 50 each: a page from
    the start reads only the log rows it returns (context_revision_tenants_pkey range,
    sorted per row, not over the whole log), and so does one from inside a group."""
    root = UUID(int=7)
    path = f"/{root}/{UUID(int=8)}"
    await db_conn.execute(
        "INSERT INTO context_revision_tenants (revision, idx, tenant_id, change, path, members)"
        " SELECT g, i, gen_random_uuid(), CASE i WHEN 0 THEN 'context' ELSE 'below' END, $1,"
        "        CASE i WHEN 0 THEN NULL"
        "        ELSE ARRAY(SELECT gen_random_uuid() FROM generate_series(1, 50 + 0 * g)) END"
        " FROM generate_series(1, 20000) AS g, (VALUES (0), (1)) AS v(i)",
        path,
    )
    await db_conn.execute("ANALYZE context_revision_tenants")
    query = Queries.load()["list_context_changes"]
    for after, expected_first in (((0, 0), (1, 0)), ((5000, 20), (5000, 21))):
        params = dict(
            root_id=str(root), scope_id=None, after_revision=after[0], after_idx=after[1],
            through_revision=20000, page_size=500,
        )  # fmt: skip
        rows = await query.many(db_conn, **params)
        assert len(rows) == 500
        assert (rows[0]["revision"], rows[0]["idx"]) == expected_first
        plan = await db_conn.fetchval(
            f"EXPLAIN (ANALYZE, FORMAT JSON) {query.sql}", *query.args(**params)
        )
        found = nodes(plan[0]["Plan"])
        scans = [n for n in found if n.get("Relation Name") == "context_revision_tenants"]
        assert {n["Index Name"] for n in scans} == {"context_revision_tenants_pkey"}, scans
        assert max(n["Actual Rows"] for n in scans) <= 30, scans
        assert not [n for n in found if n["Node Type"] == "Sort"], found
