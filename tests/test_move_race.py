"""1,000 rounds of "move A under B while B moves under A": in every round exactly one
move succeeds and the other is 409 CYCLE_DETECTED; never a cycle, never a 5xx.

Every round races a fresh pair of tenants (made by batch creates up front), so no round
needs undoing. The rounds run in LANES lanes in parallel, each lane on trees of its own
(lanes never wait on each other's locks); inside a round both moves are fired at once.
Even lanes race two roots, odd lanes two siblings under a parent of the lane's own.
MOVE_RACE_ROUNDS changes the number of rounds (docs/testing.md).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from tests.support.api import create_tenant, unique_slug
from tests.support.invariants import tree_problems

ROUNDS = int(os.environ.get("MOVE_RACE_ROUNDS", "1000"))
LANES = 20


@pytest.fixture
def settings_env(fresh_db_url: str) -> dict[str, str]:
    return {"DATABASE_URL": fresh_db_url, "DB_POOL_MAX_SIZE": "24", "WEBHOOK_CONCURRENCY": "0"}


async def move(client: TestClient, headers: dict[str, str], node: str, parent: str | None) -> Any:
    resp = await client.post(
        f"/api/v1/tenants/{node}/move", json={"new_parent_id": parent}, headers=headers
    )
    return resp.status, await resp.json()


async def race(
    client: TestClient, headers: dict[str, str], pairs: list[tuple[str, str]]
) -> Counter[str]:
    """One round per pair, one after another: both moves fired at once."""
    outcomes: Counter[str] = Counter()
    for a, b in pairs:
        (status_a, body_a), (status_b, body_b) = await asyncio.gather(
            move(client, headers, a, b), move(client, headers, b, a)
        )
        assert status_a < 500, body_a
        assert status_b < 500, body_b
        assert sorted((status_a, status_b)) == [200, 409], (body_a, body_b)
        loser, won = (body_b, body_a) if status_a == 200 else (body_a, body_b)
        assert loser["error"]["code"] == "CYCLE_DETECTED", loser
        assert won["parent_id"] == (b if status_a == 200 else a)
        outcomes["a won" if status_a == 200 else "b won"] += 1
    return outcomes


async def make_pairs(
    client: TestClient, headers: dict[str, str], count: int, parent: str | None
) -> list[tuple[str, str]]:
    """count fresh pairs of siblings under parent (roots when None), by batches of 100."""
    ids: list[str] = []
    for start in range(0, 2 * count, 100):
        items = [
            {"name": "p", "slug": unique_slug("p"), "parent_id": parent}
            for _ in range(min(100, 2 * count - start))
        ]
        resp = await client.post("/api/v1/tenants/batch", json={"tenants": items}, headers=headers)
        body = await resp.json()
        assert resp.status == 201, body
        ids += [t["id"] for t in body["created"]]
    return list(zip(ids[0::2], ids[1::2], strict=True))


async def test_crossed_moves_never_make_a_cycle(client: TestClient, admin, db_conn) -> None:
    lanes: list[list[tuple[str, str]]] = []
    for n in range(LANES):
        rounds = ROUNDS // LANES + (1 if n < ROUNDS % LANES else 0)
        # even lanes race roots, odd lanes siblings under a parent of their own
        home = None if n % 2 == 0 else (await create_tenant(client, admin))["id"]
        lanes.append(await make_pairs(client, admin, rounds, home))
    results = await asyncio.gather(*(race(client, admin, lane) for lane in lanes))
    total = sum(results, Counter())
    assert sum(total.values()) == ROUNDS
    print(f"{ROUNDS} rounds: {dict(total)}")
    assert await tree_problems(db_conn) == []
    moved = await db_conn.fetchval("SELECT count(*) FROM audit_logs WHERE action = 'tenant.moved'")
    assert moved == ROUNDS  # one winning move per round, no more
