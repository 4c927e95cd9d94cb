"""Idempotency-Key on POST: the same key and request replays the first answer and does
nothing more; another request with the key is 422; keys belong to their caller; a
retry after a lost answer finds no duplicate; concurrent twins run once."""

from __future__ import annotations

import asyncio
import base64
import os
import uuid
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from service.auth.principal import Principal
from service.base.crypto import PURPOSE_IDEMPOTENT_ANSWER, decrypt_with, idempotency_aad
from service.usecases.common import idempotency
from tests.conftest import JWT_SECRET
from tests.support.api import create_tenant, get_json, unique_slug
from tests.support.keys import bearer, key_headers, make_key, make_token
from tests.support.lossy import LossyProxy

REPLAYED = "Idempotent-Replayed"


def keyed(headers: dict[str, str], key: str | None = None) -> dict[str, str]:
    return {**headers, "Idempotency-Key": key or str(uuid.uuid4())}


async def post(client: TestClient, path: str, headers: dict[str, str], body: Any = None) -> Any:
    resp = await client.post(path, json=body, headers=headers)
    data = await resp.json() if resp.content_type == "application/json" else None
    return resp, data


async def count(conn: Any, sql: str, *args: Any) -> int:
    return int(await conn.fetchval(sql, *args))


async def test_a_repeated_create_replays_the_first_answer(client, admin, db_conn) -> None:
    headers = keyed(admin)
    body = {"name": "Once", "slug": unique_slug("once")}
    first, created = await post(client, "/api/v1/tenants", headers, body)
    assert first.status == 201, created
    assert REPLAYED not in first.headers
    again, replayed = await post(client, "/api/v1/tenants", headers, body)
    assert again.status == 201
    assert replayed == created
    assert again.headers[REPLAYED] == "true"
    for name in ("Location", "ETag", "Content-Type"):
        assert again.headers[name] == first.headers[name], name
    assert again.headers["X-Request-ID"] != first.headers["X-Request-ID"]
    # one tenant, one audit entry, one event: the replay did nothing more
    assert await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = $1", body["slug"]) == 1
    tid = uuid.UUID(created["id"])
    assert await count(db_conn, "SELECT count(*) FROM audit_logs WHERE tenant_id = $1", tid) == 1
    assert await count(db_conn, "SELECT count(*) FROM events WHERE tenant_id = $1", tid) == 1
    # the same body spelled differently (key order, spacing) is the same request
    resp = await client.post(
        "/api/v1/tenants",
        data=f'{{ "slug": "{body["slug"]}",  "name": "Once" }}',
        headers={**headers, "Content-Type": "application/json"},
    )
    assert resp.status == 201
    assert resp.headers[REPLAYED] == "true"


async def test_the_key_with_another_request_is_refused(client, admin, db_conn) -> None:
    headers = keyed(admin)
    body = {"name": "First", "slug": unique_slug("first")}
    resp, _ = await post(client, "/api/v1/tenants", headers, body)
    assert resp.status == 201
    for path, other in (
        ("/api/v1/tenants", {**body, "name": "Second"}),
        ("/api/v1/tenants", {"name": "First", "slug": unique_slug("other")}),
        ("/api/v1/tenants/batch", {"tenants": [body]}),
        ("/api/v1/tenants?x=1", body),
    ):
        resp, data = await post(client, path, headers, other)
        assert resp.status == 422, data
        assert data["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
        assert REPLAYED not in resp.headers
    assert await count(db_conn, "SELECT count(*) FROM tenants WHERE name = 'Second'") == 0


async def test_keys_belong_to_their_caller(client, admin) -> None:
    parent = await create_tenant(client, admin)
    other_root = await create_tenant(client, admin)
    key = str(uuid.uuid4())
    body = {"name": "Mine", "slug": unique_slug("mine"), "parent_id": parent["id"]}
    resp, created = await post(client, "/api/v1/tenants", keyed(admin, key), body)
    assert resp.status == 201
    # another key with the same Idempotency-Key and body runs on its own (and conflicts)
    writer = await key_headers(client.app, ("read", "write"))
    resp, data = await post(client, "/api/v1/tenants", keyed(writer, key), body)
    assert (resp.status, data["error"]["code"]) == (409, "CONFLICT")
    # the same JWT subject restricted to another subtree never sees the first answer
    token = make_token(JWT_SECRET, sub="user-9", scopes="read write", tenant_id=parent["id"])
    elsewhere = make_token(
        JWT_SECRET, sub="user-9", scopes="read write", tenant_id=other_root["id"]
    )
    body = {"name": "Sub", "slug": unique_slug("sub"), "parent_id": parent["id"]}
    resp, created = await post(client, "/api/v1/tenants", keyed(bearer(token), key), body)
    assert resp.status == 201, created
    resp, data = await post(client, "/api/v1/tenants", keyed(bearer(elsewhere), key), body)
    assert (resp.status, data["error"]["code"]) == (404, "TENANT_NOT_FOUND")
    resp, replayed = await post(client, "/api/v1/tenants", keyed(bearer(token), key), body)
    assert (resp.status, replayed) == (201, created)


async def test_errors_are_not_stored_and_the_retry_runs_again(client, admin, db_conn) -> None:
    parent = await create_tenant(client, admin)
    assert (await client.delete(f"/api/v1/tenants/{parent['id']}", headers=admin)).status == 204
    headers = keyed(admin)
    body = {"name": "Late", "slug": unique_slug("late"), "parent_id": parent["id"]}
    resp, data = await post(client, "/api/v1/tenants", headers, body)
    assert (resp.status, data["error"]["code"]) == (410, "TENANT_ARCHIVED")
    assert await count(db_conn, "SELECT count(*) FROM idempotency_keys") >= 0
    restore = await client.post(f"/api/v1/tenants/{parent['id']}/restore", headers=admin)
    assert restore.status == 200
    resp, created = await post(client, "/api/v1/tenants", headers, body)
    assert resp.status == 201, created
    assert REPLAYED not in resp.headers


@pytest.mark.parametrize(
    "value", ["", "x" * 256, "caf\u00e9", "two words", "tab\there"], ids=lambda v: repr(v)[:12]
)
async def test_malformed_keys_are_400(client, admin, value) -> None:
    resp = await client.post(
        "/api/v1/tenants",
        json={"name": "x", "slug": unique_slug()},
        headers={**admin, "Idempotency-Key": value},
    )
    data = await resp.json()
    assert resp.status == 400, data
    assert data["error"]["details"][0]["field"] == "Idempotency-Key"


async def test_the_key_is_ignored_on_other_methods(client, admin) -> None:
    tenant = await create_tenant(client, admin)
    headers = keyed(admin)
    for name in ("One", "Two"):
        resp = await client.patch(
            f"/api/v1/tenants/{tenant['id']}", json={"name": name}, headers=headers
        )
        assert (resp.status, (await resp.json())["name"]) == (200, name)
    resp = await client.get("/api/v1/tenants", headers=headers)
    assert resp.status == 200
    assert REPLAYED not in resp.headers


async def test_key_creation_is_replayed_from_an_encrypted_answer(client, admin, db_conn) -> None:
    headers = keyed(admin)
    body = {"name": f"ci-{uuid.uuid4().hex[:6]}", "scopes": ["read"]}
    resp, created = await post(client, "/api/v1/api-keys", headers, body)
    assert resp.status == 201
    again, replayed = await post(client, "/api/v1/api-keys", headers, body)
    assert (again.status, replayed) == (201, created)
    assert again.headers["Cache-Control"] == "no-store"
    assert await count(db_conn, "SELECT count(*) FROM api_keys WHERE name = $1", body["name"]) == 1
    # at rest: no plaintext key, no key text, no caller id, only ciphertext and digests
    row = await db_conn.fetchrow(
        "SELECT key_hash, answer FROM idempotency_keys WHERE $1 = ANY(mentioned_ids)",
        uuid.UUID(created["id"]),
    )
    assert created["plaintext_key"] not in row["answer"]
    assert row["answer"].startswith("v1:")
    assert headers["Idempotency-Key"].encode() not in bytes(row["key_hash"])
    status = await client.get("/api/v1/tenants", headers={"X-API-Key": created["plaintext_key"]})
    assert status.status == 200


async def test_purge_expired_removes_records_older_than_a_day(client, admin, db_conn) -> None:
    headers = keyed(admin)
    body = {"name": "Old", "slug": unique_slug("old")}
    resp, created = await post(client, "/api/v1/tenants", headers, body)
    assert resp.status == 201
    await db_conn.execute(
        "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
        "WHERE $1 = ANY(mentioned_ids)",
        uuid.UUID(created["id"]),
    )
    # expired: the key is free again (another request with it runs)
    other = {"name": "New", "slug": unique_slug("new")}
    resp, fresh = await post(client, "/api/v1/tenants", headers, other)
    assert resp.status == 201, fresh
    assert REPLAYED not in resp.headers
    await db_conn.execute(
        "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' "
        "WHERE $1 = ANY(mentioned_ids)",
        uuid.UUID(fresh["id"]),
    )
    maintenance = keyed(admin)
    resp, dry = await post(client, "/api/v1/maintenance/purge-expired", admin, {"dry_run": True})
    assert dry["idempotency_keys"] >= 1
    resp, result = await post(client, "/api/v1/maintenance/purge-expired", maintenance, {})
    assert result["idempotency_keys"] == dry["idempotency_keys"]
    left = await count(
        db_conn, "SELECT count(*) FROM idempotency_keys WHERE created_at < now() - interval '1 day'"
    )
    assert left == 0
    # purge-expired stores its answer after its batches: replayed, not run again
    again, replayed = await post(client, "/api/v1/maintenance/purge-expired", maintenance, {})
    assert (again.status, replayed, again.headers[REPLAYED]) == (200, result, "true")


async def test_a_gdpr_purge_deletes_answers_naming_the_tenant(client, admin, db_conn) -> None:
    parent = await create_tenant(client, admin)
    headers = keyed(admin)
    body = {"tenants": [{"name": "Kid", "slug": unique_slug("kid"), "parent_id": parent["id"]}]}
    resp, _ = await post(client, "/api/v1/tenants/batch", headers, body)
    assert resp.status == 201
    other = keyed(admin)
    resp, _ = await post(client, "/api/v1/tenants", other, {"name": "Kept", "slug": unique_slug()})
    pid = uuid.UUID(parent["id"])
    sql = "SELECT count(*) FROM idempotency_keys WHERE $1 = ANY(mentioned_ids)"
    assert await count(db_conn, sql, pid) == 1  # the batch answer names its parent
    before = await count(db_conn, "SELECT count(*) FROM idempotency_keys")
    resp = await client.post(
        f"/api/v1/tenants/{parent['id']}/purge",
        json={"confirm": parent["slug"], "cascade": True},
        headers=admin,
    )
    assert resp.status == 200
    assert await count(db_conn, sql, pid) == 0
    assert await count(db_conn, "SELECT count(*) FROM idempotency_keys") == before - 1
    # the key is free again: the batch runs anew (and fails: its parent is gone)
    resp, data = await post(client, "/api/v1/tenants/batch", headers, body)
    assert resp.status == 400, data


async def test_rotation_reencrypts_stored_answers(client, admin, db_conn) -> None:
    from tests.conftest import ENCRYPTION_KEY

    headers = keyed(admin)
    body = {"name": "Rot", "slug": unique_slug("rot")}
    resp, created = await post(client, "/api/v1/tenants", headers, body)
    assert resp.status == 201
    new_key = base64.b64encode(os.urandom(32)).decode()
    resp = await client.post(
        "/api/v1/maintenance/rotate-encryption-key",
        json={"old_key": ENCRYPTION_KEY, "new_key": new_key},
        headers=admin,
    )
    assert resp.status == 200, await resp.json()
    row = await db_conn.fetchrow(
        "SELECT key_hash, answer FROM idempotency_keys WHERE $1 = ANY(mentioned_ids)",
        uuid.UUID(created["id"]),
    )
    plain = decrypt_with(
        base64.b64decode(new_key),
        row["answer"],
        purpose=PURPOSE_IDEMPOTENT_ANSWER,
        aad=idempotency_aad(bytes(row["key_hash"])),
    )
    assert created["id"].encode() in plain
    again, replayed = await post(client, "/api/v1/tenants", headers, body)
    assert (again.status, replayed) == (201, created)


async def test_concurrent_twins_run_once(client, admin, db_conn) -> None:
    roots = [await create_tenant(client, admin) for _ in range(2)]
    for _ in range(3):
        headers = keyed(admin)
        body = {"name": "Twin", "slug": unique_slug("twin"), "parent_id": roots[0]["id"]}
        results = await asyncio.gather(
            *(post(client, "/api/v1/tenants", headers, body) for _ in range(4))
        )
        assert {r.status for r, _ in results} == {201}
        assert len({d["id"] for _, d in results}) == 1
        assert sum(1 for r, _ in results if REPLAYED in r.headers) == 3
        assert (
            await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = $1", body["slug"]) == 1
        )
    child = await create_tenant(client, admin, parent_id=roots[0]["id"])
    headers = keyed(admin)
    path = f"/api/v1/tenants/{child['id']}/move"
    results = await asyncio.gather(
        *(post(client, path, headers, {"new_parent_id": roots[1]["id"]}) for _ in range(4))
    )
    assert {r.status for r, _ in results} == {200}
    moved = await count(
        db_conn,
        "SELECT count(*) FROM audit_logs WHERE action = 'tenant.moved' AND resource_id = $1",
        child["id"],
    )
    assert moved == 1


async def lost_then_retried(
    client: TestClient, proxy: LossyProxy, path: str, headers: dict[str, str], body: Any
) -> tuple[int, Any]:
    """Send through the proxy, which drops the answer; then retry directly."""
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            await session.post(f"{proxy.url}{path}", json=body, headers=headers)
    await proxy.wait_answered(1)
    resp, data = await post(client, path, headers, body)
    assert resp.headers.get(REPLAYED) == "true", data
    return resp.status, data


async def test_retries_after_a_lost_answer_create_no_duplicates(client, admin, db_conn) -> None:
    proxy = LossyProxy("127.0.0.1", client.server.port)
    await proxy.start()
    try:
        parent = await create_tenant(client, admin)
        target = await create_tenant(client, admin)
        slug = unique_slug("lost")
        status, created = await lost_then_retried(
            client, proxy, "/api/v1/tenants", keyed(admin),
            {"name": "Lost", "slug": slug, "parent_id": parent["id"]},
        )  # fmt: skip
        assert status == 201
        assert await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = $1", slug) == 1
        batch = [
            {"name": "B", "slug": unique_slug("lb"), "parent_id": parent["id"]} for _ in range(3)
        ]
        status, result = await lost_then_retried(
            client, proxy, "/api/v1/tenants/batch", keyed(admin), {"tenants": batch}
        )
        assert (status, len(result["created"])) == (201, 3)
        slugs = [b["slug"] for b in batch]
        assert await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = ANY($1)", slugs) == 3
        status, moved = await lost_then_retried(
            client, proxy, f"/api/v1/tenants/{created['id']}/move", keyed(admin),
            {"new_parent_id": target["id"]},
        )  # fmt: skip
        assert (status, moved["parent_id"]) == (200, target["id"])
        moves = await count(
            db_conn, "SELECT count(*) FROM events WHERE type = 'tenant.moved' AND tenant_id = $1",
            uuid.UUID(created["id"]),
        )  # fmt: skip
        assert moves == 1
        name = f"lost-{uuid.uuid4().hex[:6]}"
        status, key = await lost_then_retried(
            client, proxy, "/api/v1/api-keys", keyed(admin), {"name": name}
        )
        assert status == 201
        assert await count(db_conn, "SELECT count(*) FROM api_keys WHERE name = $1", name) == 1
        tenants = await get_json(client, "/api/v1/tenants", {"X-API-Key": key["plaintext_key"]})
        assert tenants["data"]
    finally:
        await proxy.stop()


async def test_the_change_and_its_stored_answer_commit_together(client, admin, db_conn) -> None:
    """When storing the answer fails (here the database cancels the statement, as when it
    goes away), the change rolls back with it: 503, nothing created; the retry runs."""
    await db_conn.execute(
        """
        CREATE FUNCTION refuse_answer() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'cancelled' USING ERRCODE = 'query_canceled'; END $$;
        CREATE TRIGGER refuse_answer BEFORE INSERT ON idempotency_keys
            FOR EACH ROW EXECUTE FUNCTION refuse_answer();
        """
    )
    headers = keyed(admin)
    body = {"name": "Atomic", "slug": unique_slug("atomic")}
    try:
        resp, data = await post(client, "/api/v1/tenants", headers, body)
        assert (resp.status, data["error"]["code"]) == (503, "SERVICE_UNAVAILABLE")
        assert resp.headers["Retry-After"] == "1"
        assert (
            await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = $1", body["slug"]) == 0
        )
        assert await count(db_conn, "SELECT count(*) FROM audit_logs WHERE request_id = $1",
                           resp.headers["X-Request-ID"]) == 0  # fmt: skip
    finally:
        await db_conn.execute("DROP TRIGGER refuse_answer ON idempotency_keys")
        await db_conn.execute("DROP FUNCTION refuse_answer()")
    resp, _ = await post(client, "/api/v1/tenants", headers, body)
    assert resp.status == 201
    assert REPLAYED not in resp.headers
    assert await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = $1", body["slug"]) == 1


async def test_a_twin_that_waits_too_long_gets_409(client, db_conn, monkeypatch) -> None:
    """While another transaction holds the key (the first request, still running), the
    twin waits WAIT_SECONDS, then answers 409 IDEMPOTENCY_KEY_IN_USE and does nothing."""
    monkeypatch.setattr(idempotency, "WAIT_SECONDS", 0.3)
    issued = await make_key(client.app)
    headers = keyed({"X-API-Key": issued.plaintext})
    principal = Principal(str(issued.key.id), "api_key", frozenset(issued.key.scopes))
    body = {"name": "Twin", "slug": unique_slug("slow")}
    ticket = idempotency.ticket_for(
        principal, headers["Idempotency-Key"], method="POST", path_qs="/api/v1/tenants",
        if_match=None, body=b"{}",
    )  # fmt: skip
    lock_id = int.from_bytes(ticket.key_hash[:8], "big", signed=True)
    await db_conn.execute("SELECT pg_advisory_lock($1)", lock_id)
    try:
        resp, data = await post(client, "/api/v1/tenants", headers, body)
        assert (resp.status, data["error"]["code"]) == (409, "IDEMPOTENCY_KEY_IN_USE")
        assert resp.headers["Retry-After"] == "1"
    finally:
        await db_conn.execute("SELECT pg_advisory_unlock($1)", lock_id)
    assert await count(db_conn, "SELECT count(*) FROM tenants WHERE slug = $1", body["slug"]) == 0
    resp, _ = await post(client, "/api/v1/tenants", headers, body)
    assert resp.status == 201
