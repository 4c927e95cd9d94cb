"""Query strings and bodies of context delivery: the stream of context changes and
batch reads (docs/context-delivery.md)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec

from service.schemas.common import Strict

MAX_BATCH_CONTEXTS = 1000


class ContextChangesQuery(Strict):
    since: (
        Annotated[
            int,
            msgspec.Meta(
                ge=0,
                le=2**62,
                description="Send the changes of every revision after this one (an "
                "X-Revision); Last-Event-ID, when sent, wins. Neither: from the newest "
                "revision on.",
            ),
        ]
        | None
    ) = None


class ContextBatch(Strict):
    tenant_ids: Annotated[
        list[UUID],
        msgspec.Meta(
            min_length=1,
            max_length=MAX_BATCH_CONTEXTS,
            description="Tenants whose contexts to read (a repeated id is answered once)",
        ),
    ]
