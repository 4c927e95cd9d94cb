"""Protected subtrees: direct writes at or below a protected tenant are refused with 409
CHANGE_REQUEST_REQUIRED; the writes a change request applies go through (they run
inside `applying_change_request()`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from uuid import UUID

import asyncpg

from service.base.errors import ServiceError
from service.repositories.protection import ProtectionRepository

_APPLYING: ContextVar[bool] = ContextVar("applying_change_request", default=False)


@contextmanager
def applying_change_request() -> Iterator[None]:
    """Writes made inside this block are a change request's: protection lets them by."""
    token = _APPLYING.set(True)
    try:
        yield
    finally:
        _APPLYING.reset(token)


async def refuse_protected(
    conn: asyncpg.Connection, protection: ProtectionRepository, tenant_ids: Sequence[UUID]
) -> None:
    """409 CHANGE_REQUEST_REQUIRED when any of the tenants lies in a protected subtree,
    unless a change request is applying."""
    if _APPLYING.get():
        return
    refuse_protected_by(await protection.find_protecting_tenant(conn, tenant_ids))


def refuse_protected_by(holder: UUID | None) -> None:
    """refuse_protected, once the nearest protecting tenant (None: none) was read."""
    if holder is not None and not _APPLYING.get():
        raise ServiceError(
            "CHANGE_REQUEST_REQUIRED",
            f"tenant {holder} protects this subtree: changes here go through a change request",
        )
