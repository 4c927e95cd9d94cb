"""Scheduled applies: exactly once with two service apps on one database, after a
restart (a new app finds what is due), failing visibly when missed past the grace,
and at once when approved after apply_at."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from aiohttp.test_utils import TestClient

from service.app import create_app
from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.api import create_tenant
from tests.support.change_requests import BASE, approve, call, config_set, propose
from tests.support.keys import key_headers
from tests.support.waiting import wait_until


def _at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def _app(aiohttp_client: Any, url: str, tmp_path: Path, poll: str) -> TestClient:
    settings = Settings.from_env(base_env(url, tmp_path, SCHEDULER_POLL_SECONDS=poll))
    client: TestClient = await aiohttp_client(create_app(settings))
    return client


async def _states(conn: asyncpg.Connection) -> list[str]:
    return [r["state"] for r in await conn.fetch("SELECT state FROM change_requests ORDER BY id")]


async def test_two_apps_apply_each_scheduled_request_once(
    fresh_db_url: str, tmp_path: Path, aiohttp_client: Any
) -> None:
    first = await _app(aiohttp_client, fresh_db_url, tmp_path, "0.02")
    second = await _app(aiohttp_client, fresh_db_url, tmp_path, "0.02")
    admin = await key_headers(first.app)
    author = await key_headers(first.app, ("read", "write"), name="author")
    reviewer = await key_headers(first.app, ("read", "write"), name="reviewer")
    root = await create_tenant(first, admin)
    at = _at(4)
    for i in range(6):
        cr = await propose(first, author, [config_set(root["id"], f"k{i}", i)], apply_at=at)
        approved = await approve(second, cr["id"], reviewer)
        assert approved["state"] == "approved"
    conn = await asyncpg.connect(fresh_db_url)
    try:
        await wait_until(lambda: _states(conn), lambda s: s == ["applied"] * 6)
        counts = await conn.fetch(
            "SELECT action, count(*) AS n FROM audit_logs"
            " WHERE action IN ('change_request.applied', 'config.updated')"
            " GROUP BY action ORDER BY action"
        )
        assert [tuple(c) for c in counts] == [("change_request.applied", 6), ("config.updated", 6)]
        events = await conn.fetchval(
            "SELECT count(*) FROM events WHERE type = 'change_request.applied'"
        )
        assert events == 6
        revisions = await conn.fetch("SELECT revision FROM change_requests ORDER BY id")
        assert all(isinstance(r["revision"], int) for r in revisions)
        assert len({r["revision"] for r in revisions}) == 6
    finally:
        await conn.close()


async def test_a_restarted_service_applies_what_it_missed(
    fresh_db_url: str, tmp_path: Path, aiohttp_client: Any
) -> None:
    # The first process never runs scheduled work, and stops before apply_at.
    first = await _app(aiohttp_client, fresh_db_url, tmp_path, "0")
    admin = await key_headers(first.app)
    author = await key_headers(first.app, ("read", "write"), name="author")
    reviewer = await key_headers(first.app, ("read", "write"), name="reviewer")
    root = await create_tenant(first, admin)
    due = await propose(first, author, [config_set(root["id"], "due", 1)], apply_at=_at(1))
    await approve(first, due["id"], reviewer)
    missed = await propose(first, author, [config_set(root["id"], "old", 1)], apply_at=_at(60))
    await approve(first, missed["id"], reviewer)
    await first.close()
    conn = await asyncpg.connect(fresh_db_url)
    try:
        # The second one was due two hours ago: past the grace (one hour).
        await conn.execute(
            "UPDATE change_requests SET apply_at = now() - interval '2 hours' WHERE id = $1",
            missed["id"],
        )
        await wait_until(
            lambda: conn.fetchval(
                "SELECT apply_at < now() FROM change_requests WHERE id = $1", due["id"]
            ),
            lambda passed: bool(passed),
        )
        second = await _app(aiohttp_client, fresh_db_url, tmp_path, "0.02")
        await wait_until(lambda: _states(conn), lambda s: s == ["applied", "failed"])
        status, failed = await call(second, "GET", f"{BASE}/{missed['id']}", admin)
        assert status == 200
        assert failed["error"]["code"] == "APPLY_MISSED"
        entries = await conn.fetch("SELECT key FROM config_entries ORDER BY key")
        assert [e["key"] for e in entries] == ["due"]
        events = await conn.fetch(
            "SELECT type FROM events WHERE type IN ('change_request.applied',"
            " 'change_request.failed') ORDER BY type"
        )
        assert [e["type"] for e in events] == ["change_request.applied", "change_request.failed"]
    finally:
        await conn.close()


async def test_approving_after_apply_at_applies_at_once(
    fresh_db_url: str, tmp_path: Path, aiohttp_client: Any
) -> None:
    client = await _app(aiohttp_client, fresh_db_url, tmp_path, "0")
    author = await key_headers(client.app, ("read", "write"), name="author")
    reviewer = await key_headers(client.app, ("read", "write"), name="reviewer")
    root = await create_tenant(client, author)
    cr = await propose(client, author, [config_set(root["id"], "k", 1)], apply_at=_at(-1))
    applied = await approve(client, cr["id"], reviewer)
    assert applied["state"] == "applied"
    assert isinstance(applied["revision"], int)
