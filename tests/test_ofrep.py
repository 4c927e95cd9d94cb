"""OFREP over plain HTTP: single and bulk evaluations, 304 for a current ETag, the
protocol's error shapes and codes, scopes, and the service's own authentication."""

from __future__ import annotations

import uuid
from typing import Any

from tests.conftest import JWT_SECRET
from tests.support.api import create_tenant
from tests.support.entries import put_config
from tests.support.keys import bearer, key_headers, make_token


async def _tree(client: Any, admin: dict[str, str]) -> dict[str, str]:
    ids = {"R": (await create_tenant(client, admin))["id"]}
    ids["A"] = (await create_tenant(client, admin, parent_id=ids["R"]))["id"]
    ids["X"] = (await create_tenant(client, admin))["id"]
    await put_config(client, admin, ids["R"], "new-checkout", True, expect=201, locked=True)
    await put_config(client, admin, ids["R"], "plan", "gold", expect=201)
    await put_config(client, admin, ids["A"], "plan", "silver", expect=201)
    await put_config(client, admin, ids["A"], "limits", {"seats": 5}, expect=201)
    await put_config(client, admin, ids["A"], "db", {"pw": "x"}, expect=201, sensitive=True)
    return ids


async def _post(client: Any, path: str, headers: dict[str, str], body: Any = None, **kw: Any):
    resp = await client.post(path, headers=headers, json=body, **kw)
    return resp.status, (await resp.json() if resp.status != 304 else None), resp


async def test_single_flag_evaluation(client, admin) -> None:
    ids = await _tree(client, admin)
    reader = await key_headers(client.app, ("read",))
    ctx = {"context": {"targetingKey": ids["A"], "plan": "ignored"}}
    status, body, _ = await _post(client, "/ofrep/v1/evaluate/flags/plan", reader, ctx)
    assert (status, body) == (200, {
        "key": "plan", "reason": "TARGETING_MATCH", "value": "silver",
        "metadata": {"source_tenant_id": ids["A"], "inherited": False, "locked": False},
    })  # fmt: skip
    status, body, _ = await _post(client, "/ofrep/v1/evaluate/flags/new-checkout", reader, ctx)
    assert (status, body["value"], body["metadata"]) == (
        200, True, {"source_tenant_id": ids["R"], "inherited": True, "locked": True}
    )  # fmt: skip
    status, body, _ = await _post(client, "/ofrep/v1/evaluate/flags/limits", reader, ctx)
    assert (status, body["value"]) == (200, {"seats": 5})
    # Sensitive values are masked as GET /context masks them.
    status, body, _ = await _post(client, "/ofrep/v1/evaluate/flags/db", reader, ctx)
    assert (status, body["value"]) == (200, "***")
    # A bearer token works as well as a key.
    token = bearer(make_token(JWT_SECRET, scopes=["read"]))
    status, body, _ = await _post(client, "/ofrep/v1/evaluate/flags/plan", token, ctx)
    assert (status, body["value"]) == (200, "silver")


async def test_single_flag_errors(client, admin) -> None:
    ids = await _tree(client, admin)
    path = "/ofrep/v1/evaluate/flags/plan"
    missing = "/ofrep/v1/evaluate/flags/nope"
    ctx = {"context": {"targetingKey": ids["A"]}}
    status, body, _ = await _post(client, missing, admin, ctx)
    assert status == 404
    assert (body["key"], body["errorCode"]) == ("nope", "FLAG_NOT_FOUND")
    cases = [
        ({}, "TARGETING_KEY_MISSING"),
        ({"context": {}}, "TARGETING_KEY_MISSING"),
        ({"context": {"targetingKey": ""}}, "TARGETING_KEY_MISSING"),
        ({"context": []}, "INVALID_CONTEXT"),
        ({"context": {"targetingKey": "not-a-uuid"}}, "INVALID_CONTEXT"),
        ({"context": {"targetingKey": 5}}, "INVALID_CONTEXT"),
        ({"context": {"targetingKey": str(uuid.uuid4())}}, "INVALID_CONTEXT"),
        ([1], "PARSE_ERROR"),
        ({"context": {"targetingKey": ids["A"]}, "flags": []}, "PARSE_ERROR"),
    ]
    for request, code in cases:
        status, body, _ = await _post(client, path, admin, request)
        assert (status, body["key"], body["errorCode"]) == (400, "plan", code), request
        assert isinstance(body["errorDetails"], str)
    resp = await client.post(
        path, data=b"{not json", headers={**admin, "Content-Type": "application/json"}
    )
    assert (resp.status, (await resp.json())["errorCode"]) == (400, "PARSE_ERROR")
    # No credentials: the service's own 401.
    resp = await client.post(path, json=ctx)
    assert resp.status == 401
    # A key scoped elsewhere: the tenant is unknown to it.
    scoped = await key_headers(client.app, ("read",), tenant_id=ids["X"])
    status, body, _ = await _post(client, path, scoped, ctx)
    assert (status, body["errorCode"]) == (400, "INVALID_CONTEXT")
    # A key without read: 403.
    writer_only = await key_headers(client.app, ("write",))
    status, body, _ = await _post(client, path, writer_only, ctx)
    assert status == 403


async def test_bulk_evaluation_with_etag_and_304(client, admin) -> None:
    ids = await _tree(client, admin)
    reader = await key_headers(client.app, ("read",), tenant_id=ids["R"])
    ctx = {"context": {"targetingKey": ids["A"]}}
    status, body, resp = await _post(client, "/ofrep/v1/evaluate/flags", reader, ctx)
    assert status == 200
    assert [f["key"] for f in body["flags"]] == ["db", "limits", "new-checkout", "plan"]
    assert body["flags"][3] == {
        "key": "plan", "reason": "TARGETING_MATCH", "value": "silver",
        "metadata": {"source_tenant_id": ids["A"], "inherited": False, "locked": False},
    }  # fmt: skip
    etag = resp.headers["ETag"]
    status, _, resp = await _post(
        client, "/ofrep/v1/evaluate/flags", {**reader, "If-None-Match": etag}, ctx
    )
    assert (status, resp.headers["ETag"]) == (304, etag)
    # A change: a new tag, and the new value.
    await put_config(client, admin, ids["A"], "plan", "bronze")
    status, body, resp = await _post(
        client, "/ofrep/v1/evaluate/flags", {**reader, "If-None-Match": etag}, ctx
    )
    assert status == 200
    assert resp.headers["ETag"] != etag
    assert body["flags"][3]["value"] == "bronze"
    # Errors: the bulk failure shape (no key).
    for request, code in (
        ({}, "TARGETING_KEY_MISSING"),
        ({"context": {"targetingKey": "x"}}, "INVALID_CONTEXT"),
    ):
        status, body, _ = await _post(client, "/ofrep/v1/evaluate/flags", reader, request)
        assert (status, set(body), body["errorCode"]) == (400, {"errorCode", "errorDetails"}, code)
