"""List options for tree browsers: roots=true, search=, include_child_counts=true on the
tenant list, include_child_counts=true on children (docs/decisions.md, "Console")."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.keys import key_headers


@pytest.fixture
def settings_env(fresh_db_url: str) -> dict[str, str]:
    # Root listings and searches count rows across the whole table: a database per test.
    return {"DATABASE_URL": fresh_db_url}


def ids(tenants: list[dict[str, Any]]) -> list[str]:
    return [t["id"] for t in tenants]


async def archive(client: TestClient, headers: dict[str, str], tenant_id: str) -> None:
    resp = await client.delete(f"/api/v1/tenants/{tenant_id}", headers=headers)
    assert resp.status == 204, await resp.text()


async def test_roots_lists_only_tenants_without_parent_in_id_order(client, admin) -> None:
    first = await create_tenant(client, admin, name="First")
    child = await create_tenant(client, admin, parent_id=first["id"])
    second = await create_tenant(client, admin, name="Second")
    gone = await create_tenant(client, admin, name="Gone")
    await archive(client, admin, gone["id"])

    page = await get_json(client, "/api/v1/tenants?roots=true", admin)
    assert page == {
        "data": [first, second],
        "next_cursor": None,
        "has_more": False,
    }
    every = await get_json(client, "/api/v1/tenants?roots=true&status=all", admin)
    assert ids(every["data"]) == [first["id"], second["id"], gone["id"]]
    archived = await get_json(client, "/api/v1/tenants?roots=true&status=archived", admin)
    assert ids(archived["data"]) == [gone["id"]]
    assert child["id"] not in ids(every["data"])

    one = await get_json(client, "/api/v1/tenants?roots=true&limit=1", admin)
    assert ids(one["data"]) == [first["id"]]
    assert one["has_more"] is True
    assert one["next_cursor"] == first["id"]
    rest = await get_json(
        client, f"/api/v1/tenants?roots=true&limit=1&cursor={one['next_cursor']}", admin
    )
    assert ids(rest["data"]) == [second["id"]]
    assert rest["has_more"] is False


async def test_roots_for_a_scoped_key_is_its_own_tenant(client, admin) -> None:
    root = await create_tenant(client, admin)
    mid = await create_tenant(client, admin, parent_id=root["id"], name="Middle")
    await create_tenant(client, admin, parent_id=mid["id"])
    scoped = await key_headers(client.app, ("read",), tenant_id=mid["id"])

    page = await get_json(client, "/api/v1/tenants?roots=true", scoped)
    assert ids(page["data"]) == [mid["id"]]
    searched = await get_json(client, "/api/v1/tenants?roots=true&search=middle", scoped)
    assert ids(searched["data"]) == [mid["id"]]
    missed = await get_json(client, "/api/v1/tenants?roots=true&search=nothing", scoped)
    assert missed["data"] == []


async def test_search_matches_name_or_slug_case_insensitively(client, admin) -> None:
    acme = await create_tenant(client, admin, name="ACME Corporation", slug="acme_corp")
    paris = await create_tenant(client, admin, name="Paris office", slug="fr_paris",
                                parent_id=acme["id"])  # fmt: skip
    await create_tenant(client, admin, name="Globex", slug="globex")

    by_name = await get_json(client, "/api/v1/tenants?search=corpor", admin)
    assert ids(by_name["data"]) == [acme["id"]]
    by_slug = await get_json(client, "/api/v1/tenants?search=FR_PAR", admin)
    assert ids(by_slug["data"]) == [paris["id"]]
    both = await get_json(client, "/api/v1/tenants?search=a", admin)
    assert ids(both["data"]) == [acme["id"], paris["id"]]
    assert both["data"][1] == paris  # whole tenant objects, as the plain list gives
    under = await get_json(client, f"/api/v1/tenants?search=a&parent_id={acme['id']}", admin)
    assert ids(under["data"]) == [paris["id"]]
    tops = await get_json(client, "/api/v1/tenants?search=a&roots=true", admin)
    assert ids(tops["data"]) == [acme["id"]]
    nothing = await get_json(client, "/api/v1/tenants?search=zzz", admin)
    assert nothing == {"data": [], "next_cursor": None, "has_more": False}


async def test_search_takes_wildcards_literally(client, admin) -> None:
    percent = await create_tenant(client, admin, name="100% pure")
    await create_tenant(client, admin, name="plain", slug=unique_slug("x"))
    under = await create_tenant(client, admin, name="no underscore", slug="nounderscore")

    found = await get_json(client, "/api/v1/tenants?search=%25", admin)
    assert ids(found["data"]) == [percent["id"]]
    # "_" is a literal underscore: unique_slug() slugs have one, "nounderscore" does not.
    literal = await get_json(client, "/api/v1/tenants?search=_&limit=100", admin)
    assert under["id"] not in ids(literal["data"])
    assert len(literal["data"]) == 2


async def test_search_pages_and_filters_by_status(client, admin) -> None:
    made = [await create_tenant(client, admin, name=f"Shop {i}") for i in range(5)]
    await create_tenant(client, admin, name="Warehouse")
    await archive(client, admin, made[4]["id"])

    seen: list[str] = []
    cursor = ""
    for _ in range(5):
        page = await get_json(client, f"/api/v1/tenants?search=shop&limit=2{cursor}", admin)
        seen += ids(page["data"])
        if not page["has_more"]:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert seen == ids(made[:4])
    archived = await get_json(client, "/api/v1/tenants?search=shop&status=archived", admin)
    assert ids(archived["data"]) == [made[4]["id"]]
    every = await get_json(client, "/api/v1/tenants?search=SHOP&status=all", admin)
    assert ids(every["data"]) == ids(made)


async def test_search_stays_inside_a_scoped_callers_subtree(client, admin) -> None:
    outside = await create_tenant(client, admin, name="Team outside")
    root = await create_tenant(client, admin, name="Team root")
    inside = await create_tenant(client, admin, name="Team inside", parent_id=root["id"])
    scoped = await key_headers(client.app, ("read",), tenant_id=root["id"])

    page = await get_json(client, "/api/v1/tenants?search=team", scoped)
    assert ids(page["data"]) == [root["id"], inside["id"]]
    by_slug = await get_json(client, f"/api/v1/tenants?slug={outside['slug']}&search=t", scoped)
    assert by_slug["data"] == []
    await get_json(
        client, f"/api/v1/tenants?search=team&parent_id={outside['id']}", scoped, expect=404
    )


async def test_child_counts_on_lists_and_children(client, admin) -> None:
    root = await create_tenant(client, admin)
    kids = [await create_tenant(client, admin, parent_id=root["id"]) for _ in range(3)]
    await create_tenant(client, admin, parent_id=kids[0]["id"])
    await archive(client, admin, kids[2]["id"])

    page = await get_json(client, "/api/v1/tenants?roots=true&include_child_counts=true", admin)
    assert page["data"] == [{**root, "child_count": 2}]
    every = await get_json(
        client, "/api/v1/tenants?roots=true&status=all&include_child_counts=true", admin
    )
    assert every["data"][0]["child_count"] == 3

    listed = await get_json(
        client, f"/api/v1/tenants?parent_id={root['id']}&include_child_counts=true", admin
    )
    assert [(t["id"], t["child_count"]) for t in listed["data"]] == [
        (kids[0]["id"], 1),
        (kids[1]["id"], 0),
    ]
    children = await get_json(
        client, f"/api/v1/tenants/{root['id']}/children?include_child_counts=true", admin
    )
    assert [(t["id"], t["child_count"]) for t in children] == [
        (kids[0]["id"], 1),
        (kids[1]["id"], 0),
    ]
    with_archived = await get_json(
        client,
        f"/api/v1/tenants/{root['id']}/children?include_child_counts=true&include_archived=true"
        "&limit=2",
        admin,
    )
    assert [t["child_count"] for t in with_archived] == [1, 0]
    # Without the option the tenant objects stay exactly as before.
    plain = await get_json(client, f"/api/v1/tenants/{root['id']}/children", admin)
    assert all("child_count" not in t for t in plain)
    plain_page = await get_json(client, "/api/v1/tenants?roots=true", admin)
    assert plain_page["data"] == [root]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("roots=true&parent_id=0190a000-0000-7000-8000-000000000000", "roots"),
        ("search=", "search"),
        ("search=" + "x" * 256, "search"),
        ("search=a%00b", "search"),
        ("roots=maybe", "roots"),
        ("include_child_counts=2", "include_child_counts"),
        ("search=a&search=b", "search"),
    ],
)
async def test_bad_options_are_400(client, admin, query: str, field: str) -> None:
    body = await get_json(client, f"/api/v1/tenants?{query}", admin, expect=400)
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"][0]["field"] == field


async def test_bad_children_option_is_400(client, admin) -> None:
    root = await create_tenant(client, admin)
    body = await get_json(
        client, f"/api/v1/tenants/{root['id']}/children?include_child_counts=yes!", admin,
        expect=400,
    )  # fmt: skip
    assert body["error"]["details"][0]["field"] == "include_child_counts"
