"""Bounded waits for what background work does (no sleeping for luck)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

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
