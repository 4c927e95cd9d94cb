"""OpenFeature Remote Evaluation Protocol (OFREP) answers, as its specification names
their fields (camelCase): an evaluation, the bulk list, and the failures."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from service.views.base import View


class OfrepMetadata(View):
    source_tenant_id: UUID
    inherited: bool
    locked: bool


class OfrepEvaluation(View):
    key: str
    reason: Literal["TARGETING_MATCH"]
    value: Any
    metadata: OfrepMetadata


class OfrepBulkEvaluation(View):
    flags: list[OfrepEvaluation]


class OfrepFlagNotFound(View, rename="camel"):
    key: str
    error_code: Literal["FLAG_NOT_FOUND"]
    error_details: str


# A 400 is OFREP's failure, or the service's error body for a problem found before the
# evaluation (both credentials sent, a bad X-Consistency-Token).
OfrepBadRequest = Annotated[
    dict[str, Any],
    msgspec.Meta(
        title="OfrepBadRequest",
        description="OFREP's failure: `{key (single evaluations), errorCode (PARSE_ERROR, "
        "TARGETING_KEY_MISSING, INVALID_CONTEXT or GENERAL), errorDetails}`; or the "
        "service's error body (`{error: {...}}`) for a credentials problem",
    ),
]
