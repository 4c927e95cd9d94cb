"""Read replicas (DATABASE_REPLICA_URLS): which one may serve a read, measured in the
background rather than per request.

Every DATABASE_REPLICA_CHECK_SECONDS the checker samples the primary's WAL position
(pg_current_wal_lsn) and each replica's replay position (pg_last_wal_replay_lsn). A
replica's lag is the time since the newest primary sample it has replayed: no clock of
another host is trusted, an idle primary does not look like lag, and a paused replay
grows it second by second. A replica is usable when it is in recovery (a promoted or
split-off server is never read as a replica), answered the last check and lags at most
DATABASE_REPLICA_MAX_LAG_SECONDS. A replica that fails a check or a read is closed
and retried with exponential backoff. While the primary cannot be sampled, lags are
left as they were: nothing is being written, so the replicas are as fresh as they were.

A read carrying a consistency token picks only a replica whose last measured replay
position is at or past it (a replica just measured as behind sends the read to the
primary, which is always right).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import asyncpg

from service.db.replication import ReplicationRepository
from service.observability.logs import get_logger

log = get_logger("service.db.replicas")
BACKOFF_START_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0
SKIP_REASONS = ("down", "lagging", "behind_token", "not_standby")

PoolFactory = Callable[[str], Awaitable[asyncpg.Pool]]


def label_of(url: str) -> str:
    """host:port/database of a URL: a metric label that never carries credentials."""
    parts = urlsplit(url)
    host = parts.hostname or "local"
    port = parts.port or 5432
    return f"{host}:{port}{parts.path or '/'}"


@dataclass
class Replica:
    url: str
    label: str
    pool: asyncpg.Pool | None = None
    standby: bool = False
    replayed: int = 0
    lag_seconds: float = float("inf")
    down_until: float = 0.0
    backoff: float = BACKOFF_START_SECONDS
    requests: int = 0
    # (time, position) of the oldest primary sample it has not replayed, kept so the lag
    # goes on growing once that sample is older than every sample still kept.
    missing: tuple[float, int] | None = None
    skips: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))


class ReplicaSet:
    def __init__(
        self,
        urls: tuple[str, ...],
        *,
        max_lag_seconds: float,
        check_seconds: float,
        pool_factory: PoolFactory,
        positions: ReplicationRepository,
    ) -> None:
        self._positions = positions
        self.replicas = [Replica(url, label_of(url)) for url in urls]
        self.max_lag_seconds = max_lag_seconds
        self.check_seconds = check_seconds
        self._pool_factory = pool_factory
        # (monotonic time, primary WAL position) samples, newest last.
        self._samples: deque[tuple[float, int]] = deque(
            maxlen=max(4, int(max_lag_seconds / check_seconds) + 4)
        )
        self._turn = itertools.count()
        self._task: asyncio.Task[None] | None = None
        self._checked = asyncio.Event()

    def __bool__(self) -> bool:
        return bool(self.replicas)

    async def start(self, primary: asyncpg.Pool) -> None:
        if not self.replicas:
            return
        await self.check(primary)
        self._task = asyncio.create_task(self._loop(primary), name="replica-checker")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for replica in self.replicas:
            await self._close(replica)

    async def wait_checked(self) -> None:
        """Until the next check has finished (tests wait for a measurement, not a time)."""
        self._checked.clear()
        await self._checked.wait()

    async def _loop(self, primary: asyncpg.Pool) -> None:
        while True:
            await asyncio.sleep(self.check_seconds)
            try:
                await self.check(primary)
            except Exception as exc:  # never let the checker die
                log.warning("replica check failed", error=type(exc).__name__)

    async def check(self, primary: asyncpg.Pool) -> None:
        try:
            position = await self._positions.current_position(primary)
        except Exception:
            sampled = False  # no writes either: keep the lags as measured
        else:
            sampled = True
            self._samples.append((time.monotonic(), position))
        await asyncio.gather(*(self._check_one(r, sampled) for r in self.replicas))
        self._checked.set()

    async def _check_one(self, replica: Replica, sampled: bool) -> None:
        now = time.monotonic()
        if replica.pool is None:
            if now < replica.down_until:
                return
            try:
                replica.pool = await self._pool_factory(replica.url)
            except Exception as exc:
                self._failed(replica, exc)
                return
        try:
            replica.standby, replica.replayed = await self._positions.replica_state(replica.pool)
        except Exception as exc:
            self._failed(replica, exc)
            await self._close(replica)
            return
        replica.backoff = BACKOFF_START_SECONDS
        if not replica.standby:
            # Promoted (or split off): it lags nothing, and its replay position stays
            # where recovery ended, which would read as a lag growing forever.
            replica.lag_seconds, replica.missing = 0.0, None
        elif sampled:
            replica.lag_seconds = self._lag(replica, now)

    def _lag(self, replica: Replica, now: float) -> float:
        """Seconds since the oldest primary sample the replica has not replayed yet
        (0 when it has replayed the newest one). Only a few samples are kept; when the
        replica has replayed none of them, the oldest one it was seen missing earlier
        still counts if it has not replayed that one either."""
        missing = None
        for at, position in reversed(self._samples):
            if position <= replica.replayed:
                break
            missing = (at, position)
        else:
            earlier = replica.missing
            if missing is not None and earlier is not None and earlier[1] > replica.replayed:
                missing = min(missing, earlier)
        replica.missing = missing
        return 0.0 if missing is None else now - missing[0]

    def _failed(self, replica: Replica, exc: BaseException) -> None:
        if replica.down_until <= time.monotonic():
            log.warning("replica unavailable", replica=replica.label, error=type(exc).__name__)
        replica.down_until = time.monotonic() + replica.backoff
        replica.backoff = min(replica.backoff * 2, BACKOFF_MAX_SECONDS)
        replica.standby = False

    async def _close(self, replica: Replica) -> None:
        pool, replica.pool = replica.pool, None
        if pool is not None:
            pool.terminate()

    def choose(self, required: int | None) -> Replica | None:
        """A usable replica for a read (round robin), or None: read the primary."""
        count = len(self.replicas)
        if count == 0:
            return None
        start = next(self._turn)
        for offset in range(count):
            replica = self.replicas[(start + offset) % count]
            reason = self._unusable(replica, required)
            if reason is None:
                replica.requests += 1
                return replica
            replica.skips[reason] += 1
        return None

    def usable(self) -> bool:
        """Whether some replica may serve a read without a token now (readiness)."""
        return any(self._unusable(r, None) is None for r in self.replicas)

    def _unusable(self, replica: Replica, required: int | None) -> str | None:
        if replica.pool is None:
            return "down"
        if not replica.standby:
            return "not_standby"
        if replica.lag_seconds > self.max_lag_seconds:
            return "lagging"
        if required is not None and replica.replayed < required:
            return "behind_token"
        return None

    async def failed_read(self, replica: Replica, exc: BaseException) -> None:
        """A read on this replica failed as if it were down: skip it until it checks out."""
        self._failed(replica, exc)
        await self._close(replica)
