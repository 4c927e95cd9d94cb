"""The OFREP evaluation request, as documented. The handler checks it itself: a bad
request has OFREP's own answer shape (PARSE_ERROR and the like), not the service's."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from service.schemas.common import Strict


class OfrepEvaluationRequest(Strict):
    context: (
        Annotated[
            dict[str, Any],
            msgspec.Meta(
                description="The evaluation context: targetingKey is the tenant id (a "
                "UUID); other attributes are ignored"
            ),
        ]
        | None
    ) = None
