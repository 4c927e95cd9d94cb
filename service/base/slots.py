"""Taking a slot of an asyncio.Semaphore within a deadline."""

from __future__ import annotations

import asyncio


async def acquire_within(slots: asyncio.Semaphore, seconds: float) -> None:
    """Take a slot of `slots`, waiting at most `seconds` (TimeoutError after that). A free
    slot is taken at once with no timer; asyncio.wait_for would run a task of its own on
    every call."""
    if not slots.locked():
        await slots.acquire()
        return
    async with asyncio.timeout(seconds):
        await slots.acquire()
