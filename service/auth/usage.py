"""last_used_at, written at most once a minute per key without delaying requests.

Authentication queues the use; a background task writes queued uses in one statement.
A failed write is logged and kept for the next attempt, and stopping the app writes what
is still queued (logging what could not be written), so a use is never dropped silently
and no write outlives the app. The statement itself also skips keys written less than a
minute earlier, so several processes together still write once a minute per key.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from uuid import UUID

from service.base.tasks import cancel_and_wait
from service.db.pool import Database
from service.observability.logs import get_logger
from service.repositories.api_keys import ApiKeysRepository

log = get_logger("service.auth.usage")
TOUCH_INTERVAL = timedelta(minutes=1)
RETRY_SECONDS = 5.0
MAX_REMEMBERED = 100_000


class UsageRecorder:
    def __init__(self, db: Database, keys: ApiKeysRepository) -> None:
        self.db = db
        self.keys = keys
        self._pending: dict[UUID, datetime] = {}
        # When this process last queued each key (or saw it written), to queue once a minute.
        self._last: dict[UUID, datetime] = {}
        # Monotonic time before which a key's use needs no queueing (no clock read).
        self._due: dict[UUID, float] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    def record(
        self, key_id: UUID, stored_last_used: datetime | None, now: datetime | None = None
    ) -> None:
        """Queue a use of the key (at `now`, else the clock's now) when its last_used_at
        is a minute old or more."""
        if now is None:
            if self._due.get(key_id, 0.0) > time.monotonic():
                return  # the common case: used again within the minute, no clock read
            now = datetime.now(UTC)
        last = self._last.get(key_id)
        if last is None or (stored_last_used is not None and stored_last_used > last):
            last = stored_last_used
        if last is not None and now - last < TOUCH_INTERVAL:
            if len(self._due) >= MAX_REMEMBERED:
                self._due.clear()  # forgetting only costs a clock read
            self._due[key_id] = time.monotonic() + (last + TOUCH_INTERVAL - now).total_seconds()
            return
        if len(self._last) >= MAX_REMEMBERED:
            self._forget_before(now - TOUCH_INTERVAL)
        self._last[key_id] = now
        self._due[key_id] = time.monotonic() + TOUCH_INTERVAL.total_seconds()
        self._pending[key_id] = now
        self._wake.set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="api-key-usage-writer")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        if self._pending and not await self.flush():
            log.error(
                "last_used_at of some keys could not be written before shutdown",
                keys=len(self._pending),
            )

    async def flush(self) -> bool:
        """Write what is queued; on failure keep it queued and say so."""
        if not self._pending:
            return True
        batch, self._pending = self._pending, {}
        try:
            await self.db.run(lambda conn: self.keys.touch_api_keys(conn, batch))
        except asyncio.CancelledError:
            self._requeue(batch)  # stopping: stop() writes it once more
            raise
        except Exception as exc:
            self._requeue(batch)
            log.warning(
                "could not write last_used_at; will retry",
                keys=len(batch),
                error=type(exc).__name__,
            )
            return False
        return True

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not await self.flush():
                await asyncio.sleep(RETRY_SECONDS)
                self._wake.set()

    def _requeue(self, batch: dict[UUID, datetime]) -> None:
        for key_id, used_at in batch.items():
            self._pending.setdefault(key_id, used_at)

    def _forget_before(self, cutoff: datetime) -> None:
        self._last = {k: t for k, t in self._last.items() if t >= cutoff}
        self._due = {k: t for k, t in self._due.items() if k in self._last}
        if len(self._last) >= MAX_REMEMBERED:  # still full: every key was used this minute
            self._last.clear()
            self._due.clear()
