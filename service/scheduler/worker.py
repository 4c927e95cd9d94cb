"""The scheduler loop that runs inside every service process (as the delivery worker
does): every SCHEDULER_POLL_SECONDS it removes expired config entries and permission
policies and applies the change requests whose time has come.

Nothing here is a timer that only one process knows: the work is found in PostgreSQL
and claimed there with FOR UPDATE SKIP LOCKED (docs/decisions/change-requests.md), so
any number of processes and replicas may run this loop and each item is done once; a
process that starts after an outage finds what it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from service.base.tasks import cancel_and_wait
from service.db.errors import is_unavailable
from service.observability.logs import get_logger

log = get_logger("service.scheduler")
# A round that did a full batch looks again at once, up to this many times in a row.
MAX_BACK_TO_BACK = 10

Job = Callable[[], Awaitable[int]]


class Scheduler:
    def __init__(self, jobs: Sequence[tuple[str, Job]], *, poll_seconds: float) -> None:
        self.jobs = list(jobs)
        self.poll_seconds = poll_seconds
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def start(self) -> None:
        if self.poll_seconds > 0 and self._task is None:
            self._stopping = asyncio.Event()
            self._task = asyncio.create_task(self._run(), name="scheduler")

    def stop_claiming(self) -> None:
        self._stopping.set()

    async def stop(self) -> None:
        self._stopping.set()
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def run_once(self) -> int:
        """One round of every job; how many items were done."""
        done = 0
        for name, job in self.jobs:
            try:
                done += await job()
            except Exception as exc:
                if is_unavailable(exc):
                    log.warning("scheduled work waits for the database", job=name)
                else:
                    log.exception("scheduled work failed", job=name)
        return done

    async def _run(self) -> None:
        while not self._stopping.is_set():
            for _ in range(MAX_BACK_TO_BACK):
                if self._stopping.is_set() or not await self.run_once():
                    break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.poll_seconds)
