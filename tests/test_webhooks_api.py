"""Webhook endpoints: shapes, validation, scoping, secrets at rest and audit entries."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest

from service.base.crypto import PURPOSE_WEBHOOK_SECRET, DecryptionError, webhook_aad
from service.http.appkeys import DEPS
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant, get_json
from tests.support.keys import key_headers

URL = "http://127.0.0.1:9/hook"  # never called: this module runs no delivery worker


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings.from_env(
        base_env(
            db_url,
            tmp_path,
            WEBHOOK_ALLOW_HTTP="true",
            WEBHOOK_ALLOWED_PRIVATE_CIDRS="127.0.0.1/32",
            WEBHOOK_CONCURRENCY="0",
        )
    )


async def post(client: Any, path: str, headers: dict[str, str], body: Any = None) -> Any:
    resp = await client.post(path, json=body, headers=headers)
    return resp.status, await resp.json()


async def make_hook(client: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    status, data = await post(
        client, "/api/v1/webhooks", headers, {"url": URL, "events": ["tenant.created"], **body}
    )
    assert status == 201, data
    return dict(data)


async def test_create_get_list_patch_delete(client, admin, db_conn):
    tenant = await create_tenant(client, admin)
    resp = await client.post(
        "/api/v1/webhooks",
        json={
            "url": URL,
            "events": ["tenant.created", "config.updated", "tenant.created"],
            "tenant_id": tenant["id"],
            "description": "billing sync",
            "include_descendants": True,
        },
        headers=admin,
    )
    created = await resp.json()
    assert resp.status == 201, created
    assert resp.headers["Location"] == f"/api/v1/webhooks/{created['id']}"
    assert set(created) == {
        "id", "url", "tenant_id", "events", "description", "active", "include_descendants",
        "created_at", "updated_at", "disabled_reason", "disabled_at", "delivery_stats",
        "secret", "standard_webhooks_secret",
    }  # fmt: skip
    assert (created["disabled_reason"], created["disabled_at"], created["delivery_stats"]) == (
        None, None,
        {"success_rate": None, "attempts_succeeded": 0, "attempts_failed": 0,
         "last_success_at": None, "last_failure_at": None},
    )  # fmt: skip
    assert created["events"] == ["tenant.created", "config.updated"]  # repeats dropped
    assert (created["tenant_id"], created["active"], created["include_descendants"]) == (
        tenant["id"], True, True,
    )  # fmt: skip
    secret = created.pop("secret")
    assert created.pop("standard_webhooks_secret") == secret  # generated: the Standard form
    assert secret.startswith("whsec_")
    assert len(secret) == 6 + 44

    assert await get_json(client, f"/api/v1/webhooks/{created['id']}", admin) == created
    listed = await get_json(client, f"/api/v1/webhooks?tenant_id={tenant['id']}", admin)
    assert listed == [created]

    resp = await client.patch(
        f"/api/v1/webhooks/{created['id']}",
        json={"events": ["tenant.deleted"], "active": False, "description": ""},
        headers=admin,
    )
    patched = await resp.json()
    assert resp.status == 200, patched
    assert {k: v for k, v in patched.items() if k != "updated_at"} == {
        **{k: v for k, v in created.items() if k != "updated_at"},
        "events": ["tenant.deleted"],
        "active": False,
        "description": "",
    }
    same = await client.patch(
        f"/api/v1/webhooks/{created['id']}", json={"active": False}, headers=admin
    )
    assert await same.json() == patched  # nothing changed, nothing recorded

    resp = await client.delete(f"/api/v1/webhooks/{created['id']}", headers=admin)
    assert resp.status == 204
    resp = await client.get(f"/api/v1/webhooks/{created['id']}", headers=admin)
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "WEBHOOK_NOT_FOUND"
    resp = await client.delete(f"/api/v1/webhooks/{created['id']}", headers=admin)
    assert resp.status == 404

    audit = await db_conn.fetch(
        "SELECT action, tenant_id, changes FROM audit_logs WHERE resource_id = $1 ORDER BY id",
        created["id"],
    )
    assert [a["action"] for a in audit] == ["webhook.created", "webhook.updated", "webhook.deleted"]
    assert str(audit[0]["tenant_id"]) == tenant["id"]
    assert audit[1]["changes"] == {
        "before": {"events": ["tenant.created", "config.updated"], "active": True,
                   "description": "billing sync"},
        "after": {"events": ["tenant.deleted"], "active": False, "description": ""},
    }  # fmt: skip
    assert secret not in orjson.dumps([a["changes"] for a in audit]).decode()


async def test_secrets_are_encrypted_and_bound_to_the_webhook(client, admin, db_conn):
    chosen = "whsec_" + base64.b64encode(b"a-caller-chosen-secret-0123456789").decode()
    first = await make_hook(client, admin, secret=chosen)
    second = await make_hook(client, admin)
    rows = {
        str(r["id"]): r["encrypted_secret"]
        for r in await db_conn.fetch(
            "SELECT id, encrypted_secret FROM webhooks WHERE id = ANY($1::uuid[])",
            [first["id"], second["id"]],
        )
    }
    assert rows[first["id"]].startswith("v1:")
    assert chosen not in rows[first["id"]]
    encryptor = client.app[DEPS].keyring.encryptor
    opened = encryptor.decrypt(
        rows[first["id"]], purpose=PURPOSE_WEBHOOK_SECRET, aad=webhook_aad(first["id"])
    )
    assert opened == chosen.encode()
    with pytest.raises(DecryptionError):  # copied to another row, it does not open
        encryptor.decrypt(
            rows[first["id"]], purpose=PURPOSE_WEBHOOK_SECRET, aad=webhook_aad(second["id"])
        )

    status, rotated = await post(client, f"/api/v1/webhooks/{first['id']}/rotate-secret", admin)
    assert status == 200
    row = await db_conn.fetchrow(
        "SELECT encrypted_secret, previous_encrypted_secret, "
        "previous_secret_expires_at - now() AS overlap FROM webhooks WHERE id = $1",
        first["id"],
    )
    assert row["previous_encrypted_secret"] == rows[first["id"]]
    assert 23.9 * 3600 < row["overlap"].total_seconds() <= 24 * 3600
    assert rotated["secret"] not in row["encrypted_secret"]
    chosen_again = "whsec_" + base64.b64encode(b"another-caller-chosen-secret-42").decode()
    status, body = await post(
        client, f"/api/v1/webhooks/{first['id']}/rotate-secret", admin, {"secret": chosen_again}
    )
    assert (status, body["secret"]) == (200, chosen_again)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"events": ["tenant.created"]}, "url"),
        ({"url": URL}, "events"),
        ({"url": URL, "events": []}, "events"),
        ({"url": URL, "events": ["tenant.exploded"]}, "events[0]"),
        ({"url": URL, "events": ["webhook.test"]}, "events[0]"),
        ({"url": URL, "events": ["tenant.created"], "colour": "red"}, "colour"),
        ({"url": URL, "events": ["tenant.created"], "secret": ""}, "secret"),
        ({"url": URL, "events": ["tenant.created"], "secret": "x" * 1025}, "secret"),
        ({"url": URL, "events": ["tenant.created"], "secret": 42}, "secret"),
        ({"url": URL, "events": ["tenant.created"], "tenant_id": "nope"}, "tenant_id"),
        ({"url": URL, "events": ["tenant.created"], "active": "yes"}, "active"),
        ({"url": 42, "events": ["tenant.created"]}, "url"),
        ({"url": URL, "events": ["tenant.created"], "description": "x" * 1001}, "description"),
    ],
)
async def test_create_validation(client, admin, body, field):
    status, data = await post(client, "/api/v1/webhooks", admin, body)
    assert status == 400, data
    assert data["error"]["code"] == "VALIDATION_ERROR"
    assert data["error"]["details"][0]["field"] == field


async def test_bad_requests_never_500(client, admin):
    hook = await make_hook(client, admin)
    cases = [
        ("PATCH", f"/api/v1/webhooks/{hook['id']}", {"tenant_id": None}),
        ("PATCH", f"/api/v1/webhooks/{hook['id']}", {"url": None}),
        ("PATCH", f"/api/v1/webhooks/{hook['id']}", {"events": ["nope"]}),
        ("PATCH", "/api/v1/webhooks/not-a-uuid", {"active": True}),
        ("POST", f"/api/v1/webhooks/{hook['id']}/rotate-secret", {"secret": ""}),
        ("PATCH", f"/api/v1/webhooks/{hook['id']}", {"secret": "y" * 1025}),
        ("GET", "/api/v1/webhooks?limit=5", None),
        ("GET", "/api/v1/webhooks/deliveries/failed?limit=0", None),
        ("GET", "/api/v1/webhooks/deliveries/failed?limit=501", None),
        ("GET", f"/api/v1/webhooks/{hook['id']}/deliveries?limit=101", None),
        ("GET", f"/api/v1/webhooks/{hook['id']}/deliveries?status=lost", None),
        ("GET", "/api/v1/webhooks/deliveries/stats?webhook_id=x", None),
    ]
    for method, path, body in cases:
        resp = await client.request(method, path, json=body, headers=admin)
        data = await resp.json()
        assert resp.status == 400, (method, path, data)
        assert data["error"]["code"] == "VALIDATION_ERROR"


async def test_failed_list_limits(client, admin):
    assert await get_json(client, "/api/v1/webhooks/deliveries/failed?limit=1", admin) == []
    assert await get_json(client, "/api/v1/webhooks/deliveries/failed?limit=500", admin) == []


async def test_archived_or_unknown_tenant(client, admin):
    tenant = await create_tenant(client, admin)
    resp = await client.delete(f"/api/v1/tenants/{tenant['id']}", headers=admin)
    assert resp.status == 204
    status, data = await post(
        client, "/api/v1/webhooks", admin,
        {"url": URL, "events": ["tenant.created"], "tenant_id": tenant["id"]},
    )  # fmt: skip
    assert (status, data["error"]["code"]) == (410, "TENANT_ARCHIVED")
    status, data = await post(
        client, "/api/v1/webhooks", admin,
        {"url": URL, "events": ["tenant.created"],
         "tenant_id": "01900000-0000-7000-8000-000000000000"},
    )  # fmt: skip
    assert (status, data["error"]["code"]) == (404, "TENANT_NOT_FOUND")


async def test_scoped_callers_see_their_subtree_only(client, admin):
    parent = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=parent["id"])
    sibling = await create_tenant(client, admin)
    global_hook = await make_hook(client, admin)
    parent_hook = await make_hook(client, admin, tenant_id=parent["id"])
    child_hook = await make_hook(client, admin, tenant_id=child["id"])
    sibling_hook = await make_hook(client, admin, tenant_id=sibling["id"])
    scoped = await key_headers(client.app, ("read", "write"), tenant_id=parent["id"])
    child_key = await key_headers(client.app, ("read", "write"), tenant_id=child["id"])

    def ids(hooks: list[dict[str, Any]]) -> list[str]:
        return [h["id"] for h in hooks]

    assert ids(await get_json(client, "/api/v1/webhooks", scoped)) == [
        parent_hook["id"], child_hook["id"],
    ]  # fmt: skip
    assert ids(await get_json(client, "/api/v1/webhooks", child_key)) == [child_hook["id"]]
    assert ids(await get_json(client, f"/api/v1/webhooks?tenant_id={child['id']}", scoped)) == [
        child_hook["id"]
    ]
    everything = ids(await get_json(client, "/api/v1/webhooks", admin))
    assert {global_hook["id"], sibling_hook["id"], parent_hook["id"]} <= set(everything)

    for hidden in (global_hook, sibling_hook):
        for method, suffix in (("GET", ""), ("PATCH", ""), ("DELETE", ""), ("POST", "/test"),
                               ("POST", "/rotate-secret"), ("GET", "/deliveries")):  # fmt: skip
            body = {"active": False} if method == "PATCH" else None
            resp = await client.request(
                method, f"/api/v1/webhooks/{hidden['id']}{suffix}", json=body, headers=scoped
            )
            assert resp.status == 404, (method, suffix)
            assert (await resp.json())["error"]["code"] == "WEBHOOK_NOT_FOUND"
    resp = await client.get(f"/api/v1/webhooks/{parent_hook['id']}", headers=child_key)
    assert resp.status == 404  # above the child key's subtree
    resp = await client.get(f"/api/v1/webhooks?tenant_id={sibling['id']}", headers=scoped)
    assert (resp.status, (await resp.json())["error"]["code"]) == (404, "TENANT_NOT_FOUND")
    resp = await client.get(
        f"/api/v1/webhooks/deliveries/stats?webhook_id={global_hook['id']}", headers=scoped
    )
    assert resp.status == 404

    status, data = await post(
        client, "/api/v1/webhooks", scoped, {"url": URL, "events": ["tenant.created"]}
    )
    assert (status, data["error"]["code"]) == (403, "TENANT_ACCESS_DENIED")
    status, data = await post(
        client, "/api/v1/webhooks", scoped,
        {"url": URL, "events": ["tenant.created"], "tenant_id": sibling["id"]},
    )  # fmt: skip
    assert (status, data["error"]["code"]) == (404, "TENANT_NOT_FOUND")
    status, data = await post(
        client, "/api/v1/webhooks", scoped,
        {"url": "http://10.0.0.1/", "events": ["tenant.created"], "tenant_id": sibling["id"]},
    )  # fmt: skip
    assert (status, data["error"]["code"]) == (404, "TENANT_NOT_FOUND")  # before the URL
    own = await make_hook(client, scoped, tenant_id=child["id"])
    assert own["tenant_id"] == child["id"]

    reader = await key_headers(client.app, ("read",))
    status, data = await post(
        client, "/api/v1/webhooks", reader, {"url": URL, "events": ["tenant.created"]}
    )
    assert (status, data["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")
    resp = await client.get("/api/v1/webhooks")
    assert resp.status == 401
