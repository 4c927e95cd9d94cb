"""Sensitive config values never leak: not in any HTTP answer (unless an admin reveals
them), not in the log, the outbox, the audit log or any other stored row; stored only
in the v1 format, bound to their row."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from service.base.crypto import (
    PURPOSE_CONFIG,
    PURPOSE_WEBHOOK_SECRET,
    DecryptionError,
    Encryptor,
    config_aad,
)
from service.http.appkeys import DATABASE, KEYRING
from tests.support.api import create_tenant

V1 = re.compile(r"^v1:[0-9a-f]{24}:[0-9a-f]{32}:[0-9a-f]+$")
PLAINTEXTS = ("PLAIN-alpha-7f3e", "PLAIN-beta-91c2", "PLAIN-gamma-a0d4", "PLAIN-delta-55b9")


class Session:
    """Every answer of the scripted session, to be scanned at the end."""

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers
        self.answers: list[str] = []

    async def call(self, method: str, path: str, expect: int, **kw: Any) -> Any:
        resp = await self.client.request(method, path, headers=self.headers, **kw)
        raw = await resp.read()
        assert resp.status == expect, raw
        self.answers.append(f"{resp.status} {dict(resp.headers)} {raw.decode()}")
        return await resp.json() if raw else None


async def _every_row(conn: Any) -> str:
    tables = await conn.fetch(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
    )
    dumps = []
    for row in tables:
        text = await conn.fetchval(f"SELECT string_agg(t::text, E'\\n') FROM \"{row[0]}\" t")
        dumps.append(text or "")
    return "\n".join(dumps)


async def test_no_plaintext_anywhere(client, admin, capfd, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    alpha, beta, gamma, delta = PLAINTEXTS
    s = Session(client, admin)
    root = await s.call("POST", "/api/v1/tenants", 201, json={"name": "R", "slug": "leak_root"})
    rid = root["id"]
    child = await s.call(
        "POST", "/api/v1/tenants", 201, json={"name": "C", "slug": "leak_child", "parent_id": rid}
    )
    cid = child["id"]
    cfg = f"/api/v1/tenants/{rid}/config"
    await s.call("PUT", f"{cfg}/api.key", 201, json={"value": alpha, "sensitive": True})
    await s.call(
        "PUT",
        f"{cfg}/db",
        201,
        json={"value": {"password": beta}, "sensitive": True, "locked": True},
    )
    await s.call("PUT", f"{cfg}/api.key", 200, json={"value": gamma})  # stays sensitive
    await s.call("PUT", f"{cfg}/plain", 201, json={"value": "visible"})
    await s.call("PATCH", f"/api/v1/tenants/{rid}", 200, json={"config": {"api.key": delta}})
    await s.call("PUT", f"/api/v1/tenants/{cid}/config/tmp", 201,
                 json={"value": alpha, "sensitive": True})  # fmt: skip
    await s.call("DELETE", f"/api/v1/tenants/{cid}/config/tmp", 204)
    # Bad requests that carry a secret must not echo it back.
    await s.call("PUT", f"{cfg}/x", 400, json={"value": beta, "sensitive": "yes"})
    await s.call("PUT", f"{cfg}/x", 400, json={"value": beta, "unknown": 1})
    await s.call("PUT", f"/api/v1/tenants/{cid}/config/db", 409, json={"value": gamma})
    await s.call("PUT", f"{cfg}/9bad", 400, json={"value": delta, "sensitive": True})
    # Every read shows the mask.
    for path in (
        f"/api/v1/tenants/{rid}",
        f"/api/v1/tenants/{cid}",
        "/api/v1/tenants",
        f"/api/v1/tenants/{rid}/descendants",
        f"/api/v1/tenants/{rid}/children",
        f"/api/v1/tenants/{cid}/ancestors",
        cfg,
        f"{cfg}/api.key",
        f"{cfg}/db",
        f"/api/v1/tenants/{rid}/context",
        f"/api/v1/tenants/{cid}/context",
    ):
        await s.call("GET", path, 200)
    masked = await s.call("GET", f"/api/v1/tenants/{cid}/context", 200)
    assert masked["resolved_config"]["db"]["value"] == "***"
    assert masked["resolved_config"]["api.key"]["value"] == "***"

    # Only an admin's explicit reveal opens them (these answers are not scanned).
    resp = await client.get(f"/api/v1/tenants/{cid}/context?reveal=true", headers=admin)
    revealed = (await resp.json())["resolved_config"]
    assert (revealed["api.key"]["value"], revealed["db"]["value"]) == (delta, {"password": beta})

    async with client.app[DATABASE].connection() as conn:
        stored = await conn.fetch(
            "SELECT tenant_id, key, value, encrypted_value FROM config_entries WHERE sensitive"
        )
        everything = await _every_row(conn)
    assert len(stored) == 2
    for row in stored:
        assert row["value"] is None
        assert V1.match(row["encrypted_value"]), row["encrypted_value"]
    assert "PLAIN-" not in everything  # events, audit_logs, config_entries, ... every row
    assert '"***"' in everything  # the events and audit entries carry the mask instead
    logs = capfd.readouterr()
    log_text = logs.out + logs.err + caplog.text
    assert "request" in log_text  # the log was captured at all
    for secret in PLAINTEXTS:
        for answer in s.answers:
            assert secret not in answer, answer
        assert secret not in log_text


async def test_ciphertext_moved_to_another_row_does_not_decrypt(client, admin, capfd) -> None:
    a = (await create_tenant(client, admin))["id"]
    b = (await create_tenant(client, admin))["id"]
    for tid in (a, b):
        resp = await client.put(
            f"/api/v1/tenants/{tid}/config/token",
            json={"value": f"{PLAINTEXTS[0]}-{tid}", "sensitive": True},
            headers=admin,
        )
        assert resp.status == 201
    async with client.app[DATABASE].connection() as conn:
        token_a = await conn.fetchval(
            "SELECT encrypted_value FROM config_entries WHERE tenant_id = $1::uuid", a
        )
        # The same tenant, another key; then another tenant, the same key.
        await conn.execute(
            "INSERT INTO config_entries (tenant_id, key, encrypted_value, sensitive) "
            "VALUES ($1::uuid, 'other', $2, true)",
            a,
            token_a,
        )
        await conn.execute(
            "UPDATE config_entries SET encrypted_value = $2 WHERE tenant_id = $1::uuid", b, token_a
        )
    encryptor = client.app[KEYRING].encryptor
    assert encryptor.decrypt(token_a, purpose=PURPOSE_CONFIG, aad=config_aad(a, "token"))
    for tid, key in ((a, "other"), (b, "token")):
        with pytest.raises(DecryptionError):
            encryptor.decrypt(token_a, purpose=PURPOSE_CONFIG, aad=config_aad(tid, key))
        resp = await client.get(f"/api/v1/tenants/{tid}/config/{key}?reveal=true", headers=admin)
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (500, "INTERNAL_ERROR")
        assert "PLAIN-" not in str(body)
        # Masked reads never decrypt, so they still work.
        resp = await client.get(f"/api/v1/tenants/{tid}/config/{key}", headers=admin)
        assert (resp.status, (await resp.json())["value"]) == (200, "***")
    # Nor does another purpose's key open it.
    with pytest.raises(DecryptionError):
        encryptor.decrypt(token_a, purpose=PURPOSE_WEBHOOK_SECRET, aad=config_aad(a, "token"))
    with pytest.raises(DecryptionError):
        Encryptor(bytes(range(1, 33))).decrypt(
            token_a, purpose=PURPOSE_CONFIG, aad=config_aad(a, "token")
        )
    assert "PLAIN-" not in capfd.readouterr().out
