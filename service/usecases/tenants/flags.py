"""Config read as feature flags (the OpenFeature Remote Evaluation Protocol, OFREP;
docs/context-delivery.md): the evaluation context's targetingKey names the tenant, a
flag key is a config key, the value is the resolved (inherited) one, masked as GET
/context masks it. Answers follow OFREP's shapes, errors included."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson

from service.auth.principal import Principal
from service.base.errors import ServiceError
from service.usecases.tenants.context import ContextReads

# The value depends on the tenant the context names.
REASON = "TARGETING_MATCH"


@dataclass(frozen=True, slots=True)
class Outcome:
    """An OFREP answer: its status and JSON body."""

    status: int
    body: dict[str, Any]


class FlagEvaluation:
    def __init__(self, context: ContextReads) -> None:
        self.context = context

    async def evaluate(self, principal: Principal, key: str, raw: bytes) -> Outcome:
        """One flag: 200 with its value, 404 FLAG_NOT_FOUND, 400 with an OFREP code."""
        found = await self._config(principal, raw)
        if isinstance(found, Outcome):
            return Outcome(found.status, {"key": key, **found.body})
        entry = found.get(key)
        if entry is None:
            details = f"no config key {key!r} resolves for this tenant"
            return Outcome(
                404, {"key": key, "errorCode": "FLAG_NOT_FOUND", "errorDetails": details}
            )
        return Outcome(200, _success(key, entry))

    async def evaluate_all(self, principal: Principal, raw: bytes) -> Outcome:
        """Every flag (every resolved config key) of the tenant, or 400 with a code."""
        found = await self._config(principal, raw)
        if isinstance(found, Outcome):
            return found
        return Outcome(200, {"flags": [_success(k, e) for k, e in found.items()]})

    async def _config(self, principal: Principal, raw: bytes) -> dict[str, Any] | Outcome:
        try:
            body = orjson.loads(raw) if raw.strip() else {}
        except orjson.JSONDecodeError:
            return _failure("PARSE_ERROR", "the body is not JSON")
        if not isinstance(body, dict):
            return _failure("PARSE_ERROR", "the body must be a JSON object")
        if set(body) - {"context"}:
            return _failure("PARSE_ERROR", "the body holds only context")
        context = body.get("context")
        if context is None:
            return _failure(
                "TARGETING_KEY_MISSING", "context.targetingKey (a tenant id) is missing"
            )
        if not isinstance(context, dict):
            return _failure("INVALID_CONTEXT", "context must be an object")
        target = context.get("targetingKey")
        if target is None or target == "":
            return _failure(
                "TARGETING_KEY_MISSING", "context.targetingKey (a tenant id) is missing"
            )
        try:
            tenant_id = UUID(target) if isinstance(target, str) else None
        except ValueError:
            tenant_id = None
        if tenant_id is None:
            return _failure("INVALID_CONTEXT", "targetingKey must be a tenant id (a UUID)")
        try:
            rendered = await self.context.rendered(principal, tenant_id, reveal=False)
        except ServiceError as exc:
            if exc.code not in ("TENANT_NOT_FOUND", "TENANT_ARCHIVED"):
                raise
            return _failure("INVALID_CONTEXT", f"no active tenant {tenant_id} for this caller")
        config: dict[str, Any] = orjson.loads(rendered.body)["resolved_config"]
        return config


def _failure(code: str, details: str) -> Outcome:
    return Outcome(400, {"errorCode": code, "errorDetails": details})


def _success(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": key,
        "reason": REASON,
        "value": entry["value"],
        "metadata": {
            "source_tenant_id": entry["source_tenant_id"],
            "inherited": entry["inherited"],
            "locked": entry["locked"],
        },
    }
