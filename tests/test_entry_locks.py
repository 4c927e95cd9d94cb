"""A write below a key that an ancestor is locking at the same moment does not slip
through: whichever transaction comes second sees the other's committed row.

The locker's transaction is held open after it has written its lock (its audit insert
waits on a table lock the test holds); the writer below starts meanwhile. Without the
key locks along the line of descent the writer would check before the lock is
committed and succeed; with them, it waits and then gets 409. Writes at siblings do not
wait for each other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest

from service.http.appkeys import DATABASE
from tests.support.api import create_chain, create_tenant

# Blocked lock requests in this test's database (the server may be shared).
WAITING = """
SELECT count(*) FROM pg_locks
WHERE NOT granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    """Each test holds table locks: a database of its own."""
    return fresh_db_url


async def _wait_for_waiters(client: Any, count: int) -> None:
    async with client.app[DATABASE].connection() as conn:
        for _ in range(500):
            if await conn.fetchval(WAITING) >= count:
                return
            await asyncio.sleep(0.01)
    raise AssertionError(f"expected {count} blocked transactions")


async def _race(
    client: Any,
    db_url: str,
    locker: Callable[[], Awaitable[Any]],
    writer: Callable[[], Awaitable[Any]],
) -> tuple[Any, Any]:
    blocker = await asyncpg.connect(db_url)
    try:
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("LOCK TABLE audit_logs IN SHARE MODE")
        locking = asyncio.ensure_future(locker())
        await _wait_for_waiters(client, 1)  # the lock is written, not yet committed
        writing = asyncio.ensure_future(writer())
        await _wait_for_waiters(client, 2)
        await transaction.rollback()
        return await locking, await writing
    finally:
        await blocker.close()


async def _call(client: Any, method: str, path: str, headers: dict[str, str], body: Any) -> Any:
    resp = await client.request(method, path, json=body, headers=headers)
    return resp.status, await resp.json()


@pytest.mark.parametrize("how", ["put", "patch", "create_child"])
async def test_config_write_below_a_concurrent_lock_is_refused(client, admin, db_url, how) -> None:
    _root, mid, leaf = await create_chain(client, admin, 3)

    async def locker() -> Any:
        return await _call(client, "PUT", f"/api/v1/tenants/{mid['id']}/config/plan", admin,
                           {"value": "pro", "locked": True})  # fmt: skip

    async def writer() -> Any:
        if how == "put":
            return await _call(client, "PUT", f"/api/v1/tenants/{leaf['id']}/config/plan", admin,
                               {"value": "free"})  # fmt: skip
        if how == "patch":
            return await _call(client, "PATCH", f"/api/v1/tenants/{leaf['id']}", admin,
                               {"config": {"plan": "free"}})  # fmt: skip
        return await _call(client, "POST", "/api/v1/tenants", admin,
                           {"name": "n", "slug": "race_child", "parent_id": leaf["id"],
                            "config": {"plan": "free"}})  # fmt: skip

    (lock_status, _), (write_status, body) = await _race(client, db_url, locker, writer)
    assert lock_status == 201
    assert (write_status, body["error"]["code"]) == (409, "CONFIG_LOCKED")


async def test_permission_write_below_a_concurrent_lock_is_refused(client, admin, db_url) -> None:
    root, _mid, leaf = await create_chain(client, admin, 3)

    async def locker() -> Any:
        return await _call(client, "PUT", f"/api/v1/tenants/{root['id']}/permissions/export",
                           admin, {"value": False, "mode": "LOCKED"})  # fmt: skip

    async def writer() -> Any:
        return await _call(client, "PUT", f"/api/v1/tenants/{leaf['id']}/permissions/export",
                           admin, {"value": True})  # fmt: skip

    (lock_status, _), (write_status, body) = await _race(client, db_url, locker, writer)
    assert lock_status == 201
    assert (write_status, body["error"]["code"]) == (409, "PERMISSION_LOCKED")


async def test_writes_of_other_keys_and_trees_are_not_held_up(client, admin, db_url) -> None:
    root, leaf = await create_chain(client, admin, 2)
    _other_root, other_leaf = await create_chain(client, admin, 2)

    async def locker() -> Any:
        return await _call(client, "PUT", f"/api/v1/tenants/{root['id']}/config/plan", admin,
                           {"value": "pro", "locked": True})  # fmt: skip

    async def writers() -> Any:
        # Another key in the same tree, and the same key in another tree: both reach
        # their own audit insert (and wait there) instead of queueing behind the lock.
        return await asyncio.gather(
            _call(client, "PUT", f"/api/v1/tenants/{leaf['id']}/config/theme", admin,
                  {"value": "dark"}),
            _call(client, "PUT", f"/api/v1/tenants/{other_leaf['id']}/config/plan", admin,
                  {"value": "free"}),
        )  # fmt: skip

    blocker = await asyncpg.connect(db_url)
    try:
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("LOCK TABLE audit_logs IN SHARE MODE")
        locking = asyncio.ensure_future(locker())
        await _wait_for_waiters(client, 1)
        writing = asyncio.ensure_future(writers())
        await _wait_for_waiters(client, 3)
        async with client.app[DATABASE].connection() as conn:
            waiting = await conn.fetch(
                "SELECT locktype, relation::regclass::text AS rel FROM pg_locks WHERE NOT granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        assert {(w["locktype"], w["rel"]) for w in waiting} == {("relation", "audit_logs")}
        await transaction.rollback()
        assert (await locking)[0] == 201
        assert [status for status, _ in await writing] == [201, 201]
    finally:
        await blocker.close()


async def test_writes_of_one_key_at_siblings_are_not_held_up(client, admin, db_url) -> None:
    """The key is held along a line of descent, not for the whole tree: a write at one
    sibling does not queue a write of the same key at the other (both reach their audit
    insert and wait there), while a write at their parent does queue behind them."""
    root, left = await create_chain(client, admin, 2)
    right = await create_tenant(client, admin, parent_id=root["id"])

    def put(tenant: dict[str, Any], value: str) -> Awaitable[Any]:
        return _call(client, "PUT", f"/api/v1/tenants/{tenant['id']}/config/plan", admin,
                     {"value": value})  # fmt: skip

    blocker = await asyncpg.connect(db_url)
    try:
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("LOCK TABLE audit_logs IN SHARE MODE")
        first = asyncio.ensure_future(put(left, "a"))
        await _wait_for_waiters(client, 1)
        second = asyncio.ensure_future(put(right, "b"))
        await _wait_for_waiters(client, 2)
        parent = asyncio.ensure_future(put(root, "c"))
        await _wait_for_waiters(client, 3)
        async with client.app[DATABASE].connection() as conn:
            waiting = await conn.fetch(
                "SELECT locktype, relation::regclass::text AS rel FROM pg_locks WHERE NOT granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        assert sorted((w["locktype"], w["rel"]) for w in waiting) == [
            ("advisory", None), ("relation", "audit_logs"), ("relation", "audit_logs"),
        ]  # fmt: skip
        await transaction.rollback()
        assert [(await task)[0] for task in (first, second, parent)] == [201, 201, 201]
    finally:
        await blocker.close()
