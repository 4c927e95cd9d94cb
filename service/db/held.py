"""A request whose first transaction stays open until its answer is stored with it.

A POST sent with an Idempotency-Key must store its answer in the same transaction as
the change it made, so that a committed change always has its stored answer (a crash
between the two would otherwise let a retry run the change twice). The answer only
exists once the handler has rendered it, after the use case returned, so for such a
request `Database.transaction` does not commit the request's first transaction: it
holds it open (`HeldTransaction`), and the middleware stores the answer on the same
connection and commits, or rolls everything back when the request fails.

While a transaction is held, everything else the request does on the database runs on
that same connection (later transactions become savepoints), so the request sees its
own changes and never needs a second pooled connection.

The hold belongs to the task that serves the request: tasks it starts inherit the
context variable but not the hold.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import asyncpg
from asyncpg.transaction import Transaction

Begin = Callable[[asyncpg.Connection], Awaitable[None]]

_CURRENT: ContextVar[HeldTransaction | None] = ContextVar("held_transaction", default=None)


class HeldTransaction:
    def __init__(self, on_begin: Begin) -> None:
        # Runs first in the request's first transaction (the idempotency claim).
        self.on_begin = on_begin
        self.owner = asyncio.current_task()
        self.conn: asyncpg.Connection | None = None
        self.transaction: Transaction | None = None

    @property
    def is_open(self) -> bool:
        return self.conn is not None

    def hold(self, conn: asyncpg.Connection, transaction: Transaction) -> None:
        self.conn, self.transaction = conn, transaction

    def take(self) -> tuple[asyncpg.Connection, Transaction] | None:
        """The open connection and transaction, handed over once to be settled."""
        if self.conn is None or self.transaction is None:
            return None
        held = (self.conn, self.transaction)
        self.conn, self.transaction = None, None
        return held


def current_hold() -> HeldTransaction | None:
    """The hold of the request this task serves, if it asked for one."""
    held = _CURRENT.get()
    if held is None or held.owner is not asyncio.current_task():
        return None
    return held


@contextmanager
def holding(held: HeldTransaction) -> Iterator[HeldTransaction]:
    token = _CURRENT.set(held)
    try:
        yield held
    finally:
        _CURRENT.reset(token)
