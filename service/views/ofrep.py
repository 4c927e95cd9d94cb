"""OpenFeature Remote Evaluation Protocol (OFREP) answers, as its specification names
their fields (camelCase): an evaluation, the bulk list, and the failures."""

from __future__ import annotations

from typing import Any, Literal
from uuid import UUID

from service.views.base import View

OfrepErrorCode = Literal["PARSE_ERROR", "TARGETING_KEY_MISSING", "INVALID_CONTEXT", "GENERAL"]


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


class OfrepEvaluationFailure(View, rename="camel"):
    key: str
    error_code: OfrepErrorCode
    error_details: str


class OfrepFlagNotFound(View, rename="camel"):
    key: str
    error_code: Literal["FLAG_NOT_FOUND"]
    error_details: str


class OfrepBulkFailure(View, rename="camel"):
    error_code: OfrepErrorCode
    error_details: str
