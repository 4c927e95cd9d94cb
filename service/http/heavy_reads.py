"""A bound on heavy tree reads (whole descendants lists of more than `threshold_rows`
tenants, streamed from one pooled connection for as long as the client takes to read
them). Without it a burst of large requests from one caller holds every pooled
connection and turns other tenants' requests into 503s. A caller past its share gets 429
at once; a request that finds no free slot in the process within a short wait gets 503;
both with Retry-After. A list that fits in its first chunk (at most threshold_rows) is
light: it is answered from memory already read and never asks for a slot."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from service.base.errors import ServiceError
from service.base.slots import acquire_within

RETRY_AFTER = {"Retry-After": "1"}


class HeavyReads:
    def __init__(
        self, per_process: int, per_caller: int, wait_seconds: float, threshold_rows: int
    ) -> None:
        self.per_caller = per_caller
        self.wait_seconds = wait_seconds
        self.threshold_rows = threshold_rows
        self._slots = asyncio.Semaphore(per_process)
        self._by_caller: dict[str, int] = {}

    def running(self, caller: str) -> int:
        return self._by_caller.get(caller, 0)

    def free_for(self, caller: str) -> bool:
        """Whether a heavy read of caller's would get a slot at once."""
        return self.running(caller) < self.per_caller and not self._slots.locked()

    @asynccontextmanager
    async def slot(self, caller: str, *, wait: bool = True) -> AsyncIterator[bool]:
        """Hold a slot for one heavy read of caller's (yields True). Past the caller's
        share: 429 at once. No process slot free: wait up to wait_seconds, then 503;
        or, with wait=False, yield False at once holding nothing, so that a request
        holding a pooled connection can give it back before it waits."""
        held = self._by_caller.get(caller, 0)
        if held >= self.per_caller:
            raise ServiceError(
                "RATE_LIMITED",
                f"at most {self.per_caller} whole-subtree reads at once per caller; "
                "retry shortly or page with limit",
                headers=RETRY_AFTER,
            )
        self._by_caller[caller] = held + 1
        try:
            if self._slots.locked() and not wait:
                yield False
                return
            try:
                await acquire_within(self._slots, self.wait_seconds)
            except TimeoutError:
                raise ServiceError(
                    "SERVICE_UNAVAILABLE",
                    "too many whole-subtree reads in progress; retry shortly",
                    headers=RETRY_AFTER,
                ) from None
            try:
                yield True
            finally:
                self._slots.release()
        finally:
            left = self._by_caller[caller] - 1
            if left:
                self._by_caller[caller] = left
            else:
                del self._by_caller[caller]
