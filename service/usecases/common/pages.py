"""Keyset pages: a page of rows read one past its size (the extra row tells a next page
follows; the last kept row is its cursor), and the first page of a list PostgreSQL
renders as JSON, read from the same stream a whole list is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Generic, TypeVar
from uuid import UUID

from service.repositories.tenants import JsonRows, RawJson, RawJsonPage

R = TypeVar("R")  # a row of a page


@dataclass(frozen=True, slots=True)
class Page(Generic[R]):
    items: list[R]
    next_cursor: UUID | None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


def page_of(
    rows: Sequence[R], limit: int, cursor: Callable[[R], UUID]
) -> tuple[list[R], UUID | None]:
    """The first `limit` rows (of `limit + 1` read) and the next page's cursor, if any."""
    page = list(rows[:limit])
    return page, (cursor(page[-1]) if len(rows) > limit else None)


async def first_json_page(
    chunks: AbstractAsyncContextManager[AsyncIterator[JsonRows]], limit: int
) -> RawJsonPage:
    """The first `limit` documents of a list streamed in chunks whose first one holds
    `limit + 1` rows, and the cursor of the next page when more follow."""
    async with chunks as rows_of:
        rows = await anext(rows_of, None)
    documents = [] if rows is None else rows.documents
    next_cursor = None
    if rows is not None and len(documents) > limit:
        documents, next_cursor = documents[:limit], rows.ids[limit - 1]
    return RawJsonPage(RawJson("[" + ",".join(documents) + "]"), next_cursor)
