"""The replica checker's lag (service/db/replicas.py) without a cluster: a fake primary
and replica, and a clock the test moves. A replica that stops replaying lags more and
more, even once the first sample it missed is older than every sample kept."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from service.db import replicas
from service.db.replicas import ReplicaSet


class Positions:
    def __init__(self) -> None:
        self.primary = 100
        self.replayed = 100
        self.standby = True

    async def current_position(self, _conn: Any) -> int:
        return self.primary

    async def replica_state(self, _conn: Any) -> tuple[bool, int]:
        return self.standby, self.replayed


async def test_the_lag_grows_for_as_long_as_replay_stays_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(replicas, "time", SimpleNamespace(monotonic=lambda: clock.now))
    positions = Positions()

    async def pool(_url: str) -> Any:
        return SimpleNamespace(terminate=lambda: None)

    checked = ReplicaSet(
        ("postgresql://x@127.0.0.1:1/db",),
        max_lag_seconds=1.0,
        check_seconds=0.5,  # six samples kept: three seconds
        pool_factory=pool,
        positions=positions,  # type: ignore[arg-type]
    )
    replica = checked.replicas[0]
    await checked.check(None)  # type: ignore[arg-type]
    assert replica.lag_seconds == 0.0
    for step in range(1, 21):  # replay stops at 100; the primary writes on
        clock.now = 1000.0 + step * 0.5
        positions.primary = 100 + step * 10
        await checked.check(None)  # type: ignore[arg-type]
    # First missed: the sample of step 1, 9.5 s before the last check.
    assert replica.lag_seconds == pytest.approx(9.5)
    # It replays up to step 15's position: the oldest missing sample is step 16's.
    positions.replayed = 250
    clock.now += 0.5
    positions.primary += 10
    await checked.check(None)  # type: ignore[arg-type]
    assert replica.lag_seconds == pytest.approx(clock.now - (1000.0 + 16 * 0.5))
    positions.replayed = positions.primary
    clock.now += 0.5
    await checked.check(None)  # type: ignore[arg-type]
    assert replica.lag_seconds == 0.0


async def test_the_lag_of_a_promoted_node_stops_growing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A standby promoted under Patroni keeps its last replay position: measured as a
    replica it would lag more every second. It is skipped as not_standby, lag 0."""
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(replicas, "time", SimpleNamespace(monotonic=lambda: clock.now))
    positions = Positions()

    async def pool(_url: str) -> Any:
        return SimpleNamespace(terminate=lambda: None)

    checked = ReplicaSet(
        ("postgresql://x@127.0.0.1:1/db",), max_lag_seconds=1.0, check_seconds=0.5,
        pool_factory=pool, positions=positions,  # type: ignore[arg-type]
    )  # fmt: skip
    replica = checked.replicas[0]
    await checked.check(None)  # type: ignore[arg-type]
    positions.standby = False  # promoted: replay stays at 100, its own WAL moves on
    for step in range(1, 11):
        clock.now = 1000.0 + step * 0.5
        positions.primary = 100 + step * 10
        await checked.check(None)  # type: ignore[arg-type]
        assert replica.lag_seconds == 0.0
    assert checked.choose(None) is None
    assert replica.skips["not_standby"] == 1
