"""Rows of a server-side cursor in chunks, the next fetched while the caller works on
the current one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import asyncpg


async def read_ahead(
    cursor: asyncpg.cursor.Cursor[asyncpg.Record], first_rows: int, chunk_rows: int
) -> AsyncGenerator[list[asyncpg.Record], None]:
    """first_rows rows, then chunk_rows at a time, until the cursor runs out. From the
    second chunk on, the next one is fetched while the caller handles the current one
    (PostgreSQL renders while Python sends), so at most two chunks are held. A caller
    that stops after the first chunk (a page, a list refused a slot) costs no fetch
    ahead."""
    rows = await cursor.fetch(first_rows)
    if rows:
        yield rows
    if len(rows) < first_rows:
        return
    ahead = asyncio.ensure_future(cursor.fetch(chunk_rows))
    try:
        while True:
            rows = await ahead
            more = len(rows) == chunk_rows
            if more:
                ahead = asyncio.ensure_future(cursor.fetch(chunk_rows))
            if rows:
                yield rows
            if not more:
                return
    finally:
        if not ahead.done():
            # Closed early (the client went away): the fetch in flight owns the
            # connection until it ends; wait for it so that the transaction can close.
            await asyncio.wait([ahead])
        if not ahead.cancelled():
            ahead.exception()  # retrieved, so never logged as unobserved
