"""POST /maintenance/rotate-encryption-key: counts, all-or-nothing, the process switches
at once, other processes read with SERVICE_ENCRYPTION_KEY_PREVIOUS, restarts read."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from service.app import create_app
from service.base.crypto import (
    PURPOSE_WEBHOOK_SECRET,
    DecryptionError,
    decrypt_with,
    encrypt_with,
    webhook_aad,
)
from service.base.ids import uuid7
from service.http.appkeys import DATABASE, KEYRING, USE_CASES
from service.settings.options import Settings
from tests.conftest import ENCRYPTION_KEY, base_env
from tests.support.api import create_tenant, get_json
from tests.support.entries import put_config
from tests.support.keys import key_headers

OLD = base64.b64decode(ENCRYPTION_KEY)
URL = "/api/v1/maintenance/rotate-encryption-key"
SNAPSHOT = """
SELECT (SELECT array_agg(encrypted_value ORDER BY tenant_id, key)
        FROM config_entries WHERE sensitive) AS config,
       (SELECT array_agg(coalesce(encrypted_secret, '') || '|' ||
                         coalesce(previous_encrypted_secret, '') ORDER BY id)
        FROM webhooks) AS webhooks
"""


def new_key() -> tuple[bytes, str]:
    raw = os.urandom(32)
    return raw, base64.b64encode(raw).decode()


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    """Each test counts every secret in the database: a database of its own."""
    return fresh_db_url


async def _secrets(client: Any, headers: dict[str, str], count: int = 3) -> dict[str, Any]:
    """Sensitive values on `count` tenants (plus a plain one); their plaintexts by tenant."""
    values: dict[str, Any] = {}
    for index in range(count):
        tid = (await create_tenant(client, headers))["id"]
        values[tid] = {"password": f"pw-{index}"}
        await put_config(client, headers, tid, "db", values[tid], expect=201, sensitive=True)
        await put_config(client, headers, tid, "plain", index, expect=201)
    return values


async def _webhooks(client: Any, key: bytes) -> list[tuple[UUID, bytes, bytes | None]]:
    """Webhook rows as the webhook issue stores them (the second with a previous secret)."""
    hooks = [(uuid7(), b"whsec_current_one", None), (uuid7(), b"whsec_current_two", b"whsec_old")]
    async with client.app[DATABASE].connection() as conn:
        for hook_id, secret, previous in hooks:
            aad = webhook_aad(hook_id)
            await conn.execute(
                "INSERT INTO webhooks (id, url, events, encrypted_secret, "
                "previous_encrypted_secret) VALUES ($1, 'https://example.com/h', "
                "ARRAY['tenant.created'], $2, $3)",
                hook_id,
                encrypt_with(key, secret, purpose=PURPOSE_WEBHOOK_SECRET, aad=aad),
                None
                if previous is None
                else encrypt_with(key, previous, purpose=PURPOSE_WEBHOOK_SECRET, aad=aad),
            )
    return hooks


async def _snapshot(client: Any) -> Any:
    async with client.app[DATABASE].connection() as conn:
        return tuple(await conn.fetchrow(SNAPSHOT))


async def _reveal(client: Any, headers: dict[str, str], tid: str) -> Any:
    return (await get_json(client, f"/api/v1/tenants/{tid}/config/db?reveal=true", headers))[
        "value"
    ]


async def test_rotation_success_switches_at_once_and_survives_restart(
    client, admin, aiohttp_client, db_url, tmp_path, capfd
) -> None:
    values = await _secrets(client, admin)
    hooks = await _webhooks(client, OLD)
    before = await _snapshot(client)
    new_raw, new_text = new_key()

    resp = await client.post(URL, json={"old_key": ENCRYPTION_KEY, "new_key": new_text},
                             headers=admin)  # fmt: skip
    assert (resp.status, await resp.json()) == (
        200, {"config_entries_rotated": 3, "webhooks_rotated": 2},
    )  # fmt: skip
    after = await _snapshot(client)
    assert all(a != b for a, b in zip(before[0], after[0], strict=True))
    assert all(a != b for a, b in zip(before[1], after[1], strict=True))

    # Every stored secret is now under the new key and no longer under the old one.
    async with client.app[DATABASE].connection() as conn:
        rows = await conn.fetch(
            "SELECT id, encrypted_secret, previous_encrypted_secret FROM webhooks"
        )
        audit = await conn.fetchrow(
            "SELECT actor_id, resource_type, changes::text AS changes FROM audit_logs "
            "WHERE action = 'maintenance.encryption_key_rotated'"
        )
    stored = {r["id"]: r for r in rows}
    for hook_id, secret, previous in hooks:
        aad = webhook_aad(hook_id)
        row = stored[hook_id]
        assert decrypt_with(new_raw, row["encrypted_secret"],
                            purpose=PURPOSE_WEBHOOK_SECRET, aad=aad) == secret  # fmt: skip
        with pytest.raises(DecryptionError):
            decrypt_with(OLD, row["encrypted_secret"], purpose=PURPOSE_WEBHOOK_SECRET, aad=aad)
        if previous is None:
            assert row["previous_encrypted_secret"] is None
        else:
            assert decrypt_with(new_raw, row["previous_encrypted_secret"],
                                purpose=PURPOSE_WEBHOOK_SECRET, aad=aad) == previous  # fmt: skip
    assert audit is not None
    assert audit["resource_type"] == "encryption_key"
    assert '"config_entries_rotated": 3' in audit["changes"]
    for secret_text in (ENCRYPTION_KEY, new_text, new_raw.hex(), OLD.hex()):
        assert secret_text not in audit["changes"]

    # This process switched at once: it reads the values and writes new ones under the
    # new key, and keeps the old key for reading.
    keyring = client.app[KEYRING].encryptor
    assert (keyring.key, keyring.previous[0]) == (new_raw, OLD)
    for tid, value in values.items():
        assert await _reveal(client, admin, tid) == value

    # A second call with the same keys is safe: every value is already under new_key.
    resp = await client.post(URL, json={"old_key": ENCRYPTION_KEY, "new_key": new_text},
                             headers=admin)  # fmt: skip
    assert (await resp.json())["config_entries_rotated"] == 3

    # Restart with the new key alone: everything reads.
    restarted = await aiohttp_client(
        create_app(Settings.from_env(base_env(db_url, tmp_path, SERVICE_ENCRYPTION_KEY=new_text)))
    )
    headers = await key_headers(restarted.app)
    for tid, value in values.items():
        assert await _reveal(restarted, headers, tid) == value
    # Another process still on the old key reads through SERVICE_ENCRYPTION_KEY_PREVIOUS.
    other = await aiohttp_client(
        create_app(Settings.from_env(base_env(
            db_url, Path(tmp_path, "other"), SERVICE_ENCRYPTION_KEY_PREVIOUS=new_text,
        )))
    )  # fmt: skip
    tid, value = next(iter(values.items()))
    assert await _reveal(other, await key_headers(other.app), tid) == value
    logged = capfd.readouterr()
    assert "encryption key rotated" in logged.out
    for key_text in (ENCRYPTION_KEY, new_text, new_raw.hex(), OLD.hex()):
        assert key_text not in logged.out + logged.err


async def test_rotation_reencrypts_values_other_processes_wrote_with_the_old_key(
    client, admin, aiohttp_client, db_url, tmp_path
) -> None:
    values = await _secrets(client, admin, 1)
    _, new_text = new_key()
    resp = await client.post(URL, json={"old_key": ENCRYPTION_KEY, "new_key": new_text},
                             headers=admin)  # fmt: skip
    assert resp.status == 200
    # A process that has not restarted yet still writes with the old key ...
    lagging = await aiohttp_client(create_app(Settings.from_env(base_env(db_url, tmp_path))))
    tid = (await create_tenant(lagging, await key_headers(lagging.app)))["id"]
    await put_config(lagging, admin, tid, "db", "late", expect=201, sensitive=True)
    values[tid] = "late"
    # ... the rotated process still reads it, and running the rotation again moves it.
    assert await _reveal(client, admin, tid) == "late"
    resp = await client.post(URL, json={"old_key": ENCRYPTION_KEY, "new_key": new_text},
                             headers=admin)  # fmt: skip
    assert (await resp.json())["config_entries_rotated"] == 2
    restarted = await aiohttp_client(
        create_app(Settings.from_env(base_env(db_url, tmp_path, SERVICE_ENCRYPTION_KEY=new_text)))
    )
    headers = await key_headers(restarted.app)
    for tenant, value in values.items():
        assert await _reveal(restarted, headers, tenant) == value


@pytest.mark.parametrize(
    "settings_env",
    [{"SERVICE_ENCRYPTION_KEY_PREVIOUS": base64.b64encode(bytes(range(100, 132))).decode()}],
)
async def test_mismatched_old_key_changes_nothing(client, admin) -> None:
    values = await _secrets(client, admin)
    await _webhooks(client, OLD)
    before = await _snapshot(client)
    _, new_text = new_key()
    # A key this process does not hold at all.
    _, unknown = new_key()
    resp = await client.post(URL, json={"old_key": unknown, "new_key": new_text}, headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (409, "ENCRYPTION_KEY_MISMATCH")
    # A key it holds (SERVICE_ENCRYPTION_KEY_PREVIOUS) that did not encrypt the values.
    previous = base64.b64encode(bytes(range(100, 132))).decode()
    resp = await client.post(URL, json={"old_key": previous, "new_key": new_text}, headers=admin)
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (409, "ENCRYPTION_KEY_MISMATCH")
    assert previous not in str(body)
    assert new_text not in str(body)
    assert await _snapshot(client) == before
    assert client.app[KEYRING].encryptor.key == OLD
    for tid, value in values.items():
        assert await _reveal(client, admin, tid) == value
    async with client.app[DATABASE].connection() as conn:
        audits = await conn.fetchval(
            "SELECT count(*) FROM audit_logs WHERE action = 'maintenance.encryption_key_rotated'"
        )
    assert audits == 0


@pytest.mark.parametrize("settings_env", [{"DB_POOL_MIN_SIZE": "1", "DB_POOL_MAX_SIZE": "1"}])
@pytest.mark.parametrize("corrupt", ["last_config_entry", "webhook_previous_secret"])
async def test_failure_halfway_rolls_everything_back(client, admin, corrupt) -> None:
    values = await _secrets(client, admin, 5)
    hooks = await _webhooks(client, OLD)
    async with client.app[DATABASE].connection() as conn:
        if corrupt == "last_config_entry":
            # A ciphertext copied from another row: valid form, wrong row, never decrypts.
            await conn.execute(
                "UPDATE config_entries SET encrypted_value = (SELECT encrypted_value FROM "
                "config_entries WHERE sensitive ORDER BY tenant_id LIMIT 1) WHERE tenant_id = "
                "(SELECT tenant_id FROM config_entries WHERE sensitive ORDER BY tenant_id DESC "
                "LIMIT 1) AND sensitive"
            )
        else:
            await conn.execute(
                "UPDATE webhooks SET previous_encrypted_secret = 'v1:00:00:00' WHERE id = $1",
                hooks[1][0],
            )
    before = await _snapshot(client)
    rotation = client.app[USE_CASES].encryption_key_rotation
    rotation.batch_size = 2  # several batches before the bad one
    statements: list[str] = []
    async with client.app[DATABASE].connection() as conn:
        conn.add_query_logger(lambda record: statements.append(record.query))
    _, new_text = new_key()

    resp = await client.post(URL, json={"old_key": ENCRYPTION_KEY, "new_key": new_text},
                             headers=admin)  # fmt: skip
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (409, "ENCRYPTION_KEY_MISMATCH")
    await asyncio.sleep(0.01)
    updates = [q for q in statements if q.lstrip().startswith("UPDATE config_entries")]
    assert len(updates) >= 2  # batches were written before the failure was met
    assert await _snapshot(client) == before
    assert client.app[KEYRING].encryptor.key == OLD
    for tid, value in list(values.items())[:4]:
        assert await _reveal(client, admin, tid) == value


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"old_key": "not base64!", "new_key": ENCRYPTION_KEY}, "old_key"),
        ({"old_key": ENCRYPTION_KEY, "new_key": base64.b64encode(b"short").decode()}, "new_key"),
        ({"old_key": ENCRYPTION_KEY, "new_key": ENCRYPTION_KEY}, "new_key"),
        ({"old_key": ENCRYPTION_KEY, "new_key": base64.b64encode(b"a" * 32).decode()}, "new_key"),
        ({"old_key": ENCRYPTION_KEY}, "new_key"),
        ({"old_key": ENCRYPTION_KEY, "new_key": 7}, "new_key"),
    ],
)
async def test_bad_keys_are_400(client, admin, body, field) -> None:
    resp = await client.post(URL, json=body, headers=admin)
    data = await resp.json()
    assert (resp.status, data["error"]["code"]) == (400, "VALIDATION_ERROR"), data
    assert data["error"]["details"][0]["field"] == field
    assert ENCRYPTION_KEY not in str(data)


async def test_rotation_needs_admin(client) -> None:
    writer = await key_headers(client.app, ("read", "write"))
    _, new_text = new_key()
    resp = await client.post(URL, json={"old_key": ENCRYPTION_KEY, "new_key": new_text},
                             headers=writer)  # fmt: skip
    assert (resp.status, (await resp.json())["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")
    assert client.app[KEYRING].encryptor.key == OLD
