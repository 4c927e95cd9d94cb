"""The OFREP evaluation request, as documented. The handler checks it itself: a bad
request has OFREP's own answer shape (PARSE_ERROR and the like), not the service's."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec

from service.schemas.common import Strict


class OfrepContext(msgspec.Struct, rename={"targeting_key": "targetingKey"}):
    """The evaluation context; attributes other than targetingKey are allowed and
    ignored."""

    targeting_key: Annotated[UUID, msgspec.Meta(description="The tenant's id")]


class OfrepEvaluationRequest(Strict):
    context: OfrepContext
