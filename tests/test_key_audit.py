"""Every key and role change leaves an audit entry written with the change, and no audit
entry, event, log line or answer other than create and rotate carries a key's text (or
its hash)."""

from __future__ import annotations

from typing import Any

from service.auth.keys import hash_key
from tests.conftest import HMAC_SECRET
from tests.support.api import create_tenant


class Recorder:
    """Sends requests and keeps every answer, split by whether it may show a key."""

    def __init__(self, client, headers) -> None:
        self.client = client
        self.headers = headers
        self.revealing: list[str] = []  # create and rotate answers
        self.others: list[str] = []
        self.request_ids: dict[str, str] = {}

    async def send(self, method: str, path: str, json: Any = None, *, reveals=False, expect):
        resp = await self.client.request(method, path, json=json, headers=self.headers)
        text = await resp.text()
        assert resp.status == expect, text
        record = text + "\n" + "\n".join(f"{k}: {v}" for k, v in resp.headers.items())
        (self.revealing if reveals else self.others).append(record)
        return (await resp.json() if text else None), resp.headers["X-Request-ID"]


async def test_changes_are_audited_and_keys_never_leak(client, admin, db_conn, capsys) -> None:
    tenant = await create_tenant(client, admin)
    api = Recorder(client, admin)
    listed = (await api.send("GET", "/api/v1/api-keys?limit=100", expect=200))[0]["data"]
    expected: list[tuple[str, str, str, str | None]] = []  # action, resource, request, tenant

    key, rid = await api.send("POST", "/api/v1/api-keys", {"name": "audited",
                              "tenant_id": tenant["id"]}, reveals=True, expect=201)  # fmt: skip
    expected.append(("api_key.created", key["id"], rid, tenant["id"]))
    _, rid = await api.send("PATCH", f"/api/v1/api-keys/{key['id']}",
                            {"name": "renamed", "rate_limit_max": 9}, expect=200)  # fmt: skip
    expected.append(("api_key.updated", key["id"], rid, tenant["id"]))
    role, rid = await api.send("POST", "/api/v1/roles", {"name": "auditors", "scopes": ["read"],
                               "tenant_id": tenant["id"]}, expect=201)  # fmt: skip
    expected.append(("role.created", role["id"], rid, tenant["id"]))
    _, rid = await api.send("PATCH", f"/api/v1/roles/{role['id']}",
                            {"description": "read only"}, expect=200)  # fmt: skip
    expected.append(("role.updated", role["id"], rid, tenant["id"]))
    _, rid = await api.send("PUT", f"/api/v1/api-keys/{key['id']}/role",
                            {"role_id": role["id"]}, expect=200)  # fmt: skip
    expected.append(("role.assigned", key["id"], rid, tenant["id"]))
    _, rid = await api.send("DELETE", f"/api/v1/api-keys/{key['id']}/role", expect=200)
    expected.append(("role.removed", key["id"], rid, tenant["id"]))
    new, rid = await api.send("POST", f"/api/v1/api-keys/{key['id']}/rotate",
                              {"grace_period_seconds": 60}, reveals=True, expect=201)  # fmt: skip
    expected.append(("api_key.rotated", key["id"], rid, tenant["id"]))
    expected.append(("api_key.created", new["id"], rid, tenant["id"]))
    _, rid = await api.send("DELETE", f"/api/v1/api-keys/{key['id']}", expect=204)
    expected.append(("api_key.revoked", key["id"], rid, tenant["id"]))
    _, rid = await api.send("DELETE", f"/api/v1/roles/{role['id']}", expect=204)
    expected.append(("role.deleted", role["id"], rid, tenant["id"]))

    # Reads of every kind, with and without the keys themselves.
    for path in (f"/api/v1/api-keys/{key['id']}", f"/api/v1/api-keys/{new['id']}",
                 f"/api/v1/api-keys/{new['id']}/scopes", "/api/v1/api-keys?include_revoked=true",
                 "/api/v1/api-keys/dormant?days=1", "/api/v1/roles"):  # fmt: skip
        await api.send("GET", path, expect=200)
    using_new = Recorder(client, {"X-API-Key": new["plaintext_key"]})
    await using_new.send("GET", "/api/v1/tenants", expect=200)
    using_old = Recorder(client, {"X-API-Key": key["plaintext_key"]})
    await using_old.send("GET", "/api/v1/tenants", expect=401)
    answers = "\n".join(api.others + using_new.others + using_old.others)

    rows = await db_conn.fetch(
        "SELECT action, resource_id, request_id, tenant_id::text AS tenant_id, actor_id, "
        "actor_type FROM audit_logs WHERE request_id = ANY($1) ORDER BY id",
        [rid for *_, rid, _ in expected],
    )
    assert sorted(
        (r["action"], r["resource_id"], r["request_id"], r["tenant_id"]) for r in rows
    ) == sorted(expected)
    admin_id = next(k["id"] for k in listed if k["prefix"] == admin["X-API-Key"][:12])
    assert {(r["actor_id"], r["actor_type"]) for r in rows} == {(admin_id, "api_key")}

    changes = await db_conn.fetchval(
        "SELECT changes FROM audit_logs WHERE action = 'api_key.updated' AND resource_id = $1",
        key["id"],
    )
    assert changes == {
        "before": {"name": "audited", "rate_limit_max": None},
        "after": {"name": "renamed", "rate_limit_max": 9},
    }
    audit_text = "\n".join(
        r["row"]
        for r in await db_conn.fetch("SELECT row_to_json(a)::text AS row FROM audit_logs a")
    )
    events_text = "\n".join(
        r["row"] for r in await db_conn.fetch("SELECT row_to_json(e)::text AS row FROM events e")
    )
    logs = capsys.readouterr().out
    assert "route=/api/v1/api-keys" in logs  # the request lines were captured
    for created in (key, new):
        plaintext = created["plaintext_key"]
        digest = hash_key(HMAC_SECRET.encode(), plaintext).hex()
        assert any(plaintext in text for text in api.revealing)  # the grep can see it
        for where, text in (("audit", audit_text), ("events", events_text), ("logs", logs),
                            ("answers", answers)):  # fmt: skip
            assert plaintext not in text, where
            assert plaintext[12:] not in text, where
            assert digest not in text, where
