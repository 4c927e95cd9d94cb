"""Views of context delivery: the event stream as OpenAPI describes it, hydration's list
and batch answers (docs/context-delivery.md)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

import msgspec

from service.views.base import View
from service.views.entries import TenantContext

EVENT_STREAM_DESCRIPTION = (
    "Server-Sent Events. `event: context` with data "
    '`{"revision": n, "tenant_id": "...", "context": {...as GET /context...}}`; '
    '`event: removed` with data `{"revision": n, "tenant_id": "...", "reason": '
    '"moved" | "archived" | "purged"}`; each with `id: <revision>:<index>` (send it back '
    "as Last-Event-ID to resume). `event: reset` with data "
    '`{"revision": <oldest kept>}` when the position is older than the kept log (the '
    "stream then ends: hydrate again and follow from the new X-Revision). Comment lines "
    "(`: heartbeat`) keep an idle stream alive."
)


class ContextStreamEvent(View):
    """One event of the stream (its SSE fields); `data` is JSON text."""

    event: Literal["context", "removed", "reset"]
    data: str
    # absent on reset
    id: str | msgspec.UnsetType = msgspec.UNSET


ContextStreamEvent.__doc__ = EVENT_STREAM_DESCRIPTION


class ContextBatchResult(View):
    contexts: list[TenantContext]
    not_found: list[UUID]
