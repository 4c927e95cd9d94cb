"""Bounded waits for what background work does (no sleeping for luck)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def wait_until(
    probe: Callable[[], Awaitable[T]], done: Callable[[T], bool], *, within: float = 20.0
) -> T:
    """Call probe until done(result) holds; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        result = await probe()
        if done(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {within} s: {result!r}")
        await asyncio.sleep(0.05)


async def reached(
    events: list[asyncio.Event], workers: list[asyncio.Task[Any]], *, within: float = 30.0
) -> None:
    """Until every event is set by the workers that set them. A worker that ends first
    (a 503, an error) would never set its event: its error fails the wait at once, and
    `within` bounds the rest."""
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        async with asyncio.timeout(within):
            while not all(event.is_set() for event in events):
                watched = {*(w for w in waiters if not w.done()), *workers}
                done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                for task in done & set(workers):
                    if not all(event.is_set() for event in events):
                        task.result()  # its error, if it failed
                        raise AssertionError(f"{task.get_name()} ended before its event")
    finally:
        for waiter in waiters:
            waiter.cancel()
