"""Schemathesis hooks for a run against a live service, used by the repository's
schemathesis.toml (docs/testing.md) and by tests/test_schemathesis.py.

- Every POST gets a fresh Idempotency-Key where the case sends a valid one: a key
  generated twice would replay the first answer, or be refused as reused with another
  request, and the stateful phase would create almost nothing.
- The run's own key is never changed: a generated PATCH, rotation or revocation of the
  key the run authenticates with (TENANT_API_KEY) would leave the rest of the run with
  a limit of 1 request a minute, or 401s. Its id, learned from the answers that show
  it, is replaced by an id that names nothing.
- A valid request may be refused only for a reason no schema can state (the tables
  below): valid_requests_are_accepted replaces schemathesis' positive_data_acceptance.
- A 304 answer to a request with If-None-Match is expected: the document states it in
  the operation's description rather than as a response, because a body-less status
  makes generated clients type the whole answer as Any.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import status_code_conformance

from service.base.errors import STATUS_BY_CODE

_VALID_KEY = re.compile(r"[!-~]{1,255}")
# The shown prefix of a key: its first 12 characters (sk_live_ or sk_test_ and 4 more).
_OWN_PREFIX = os.environ.get("TENANT_API_KEY", "")[:12] or None
_OWN_IDS: set[str] = set()


def learn_own_key(body: Any) -> None:
    """Remember the id of the run's own key wherever an answer shows it (GET /me, key
    lists and entries): an object with `prefix` equal to the key's first 12 characters."""
    if _OWN_PREFIX is None:
        return
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("prefix") == _OWN_PREFIX and isinstance(item.get("id"), str):
                _OWN_IDS.add(item["id"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def spare_own_key(case: schemathesis.Case) -> None:
    """Point an operation on the run's own key at a key that does not exist."""
    params = case.path_parameters or {}
    if case.path.startswith("/api/v1/api-keys/{id}") and str(params.get("id")) in _OWN_IDS:
        params["id"] = str(uuid.uuid4())


def fresh_idempotency_key(case: schemathesis.Case) -> None:
    """A new Idempotency-Key where the case sends a valid one (or none)."""
    headers = case.headers or {}
    key = headers.get("Idempotency-Key")
    if case.method.upper() == "POST" and (key is None or _VALID_KEY.fullmatch(str(key))):
        headers["Idempotency-Key"] = f"st-{uuid.uuid4()}"
        case.headers = headers


def is_not_modified(response: Any, case: schemathesis.Case) -> bool:
    """A 304 to a read that sent If-None-Match (the description of such reads says so)."""
    sent = {name.lower() for name in (case.headers or {})}
    return response.status_code == 304 and "if-none-match" in sent


@schemathesis.hook
def before_call(ctx: Any, case: schemathesis.Case, **kwargs: Any) -> None:
    fresh_idempotency_key(case)
    spare_own_key(case)


@schemathesis.hook
def after_call(ctx: Any, case: schemathesis.Case, response: Any) -> None:
    if case.method.upper() == "GET" and response.status_code == 200:
        with contextlib.suppress(ValueError):  # not JSON: the console's files, metrics
            learn_own_key(response.json())


@schemathesis.check
def status_code_documented(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """status_code_conformance, with the 304 of a conditional read expected."""
    if is_not_modified(response, case):
        return None
    return status_code_conformance(ctx, response, case)


# Refusals of schema-valid requests that no schema could rule out, by status and code.
LEGITIMATE_REFUSALS: dict[int, dict[str, str]] = {
    400: {
        # Whether a host is public is known only by resolving it (no network in tests).
        "UNSAFE_WEBHOOK_URL": "the URL's host does not resolve to a public address",
        # Security alternatives (key or token) cannot say "not both"; the generator adds
        # a token beside the run's key.
        "AMBIGUOUS_CREDENTIALS": "one credential per request, as the schemes describe",
    },
    401: {
        "INVALID_CREDENTIALS": "a generated token or key is not one the service issued",
        "UNAUTHORIZED": "a generated case without the run's key",
    },
    403: {"TENANT_ACCESS_DENIED": "a tenant role fits only keys inside that tenant"},
    404: {
        code: "a generated id or key that names nothing"
        for code in STATUS_BY_CODE
        if code.endswith("NOT_FOUND")
    },
    409: {
        code: "a conflict with the data as it stands (a taken slug, a lock, a cycle, ...)"
        for code, status in STATUS_BY_CODE.items()
        if status == 409 and code != "IDEMPOTENCY_KEY_IN_USE"
    },
    410: {
        "TENANT_ARCHIVED": "the tenant was archived by an earlier request",
        "HISTORY_UNAVAILABLE": "a generated moment before the kept history",
    },
    412: {"PRECONDITION_FAILED": "a generated If-Match names another version"},
    422: {
        "CONFIG_SCHEMA_VIOLATION": "a value schema declared by an earlier request refuses it",
        "BUDGET_NOT_NUMERIC": "a budget declared by an earlier request wants a number",
        "REVERT_UNSUPPORTED": "the generated revision changed tenants, not only entries",
    },
}
# VALIDATION_ERRORs of rules across fields or across time, by field.
CROSS_FIELD_RULES = {
    "to": "`to` must be later than `from`",
    "to_seq": "`to_seq` must not be less than `from_seq`",
    "roots": "`roots` cannot be combined with `parent_id`",
    "expires_at": "an expiry must be in the future",
    "confirm": "a purge is confirmed by the tenant's own slug",
    "region": "one of the deployment's SERVICE_REGIONS (a setting, not a fixed set)",
    "rate_limit_max": "a rate limit needs both its maximum and its window",
    "rate_limit_window": "a rate limit needs both its maximum and its window",
    "X-Consistency-Token": "a token must carry the deployment's HMAC tag, which no "
    "generator can produce",
    "old_key": "the old key must be the one the data is encrypted with",
    "new_key": "the new key must differ from the old one",
    "tenant_id": "a tenant-scoped key or role cannot name another tenant",
    # Free-form JSON: no NUL, bounded depth and 64-bit integers anywhere inside, which a
    # schema of arbitrary JSON cannot state (docs/decisions/api.md).
    "config": "free-form config values refuse NUL, deep nesting and huge integers",
    "metadata": "free-form metadata refuses NUL, deep nesting and huge integers",
    "cursor": "a page's cursor must lie in the subtree of the tenant in the path",
    # A moment of the history: one of as_of and revision, in the past, not past the
    # newest revision; a masked history takes no reveal; a diff's from is not after to.
    "as_of": "a moment is in the past, and named by as_of or revision, not both",
    "revision": "a revision exists (not past the newest), named by as_of or revision only",
    "reveal": "history answers are masked: no reveal with as_of or revision",
    "from": "a diff's from is a revision or time at or before to",
    # A value schema must be a valid, self-contained draft 2020-12 JSON Schema, which the
    # document's "an object" cannot state.
    "schema": "a value schema must be a valid draft 2020-12 JSON Schema",
    # Each change of a change request holds the free-form values and expiries above.
    "changes": "a change's value refuses NUL, deep nesting and huge integers; its expiry "
    "must be in the future",
    "change": "a previewed delete takes no value, mode, locked or sensitive",
    "value": "a previewed set needs the value it would set",
}


def _legitimate(code: str, field: str | None) -> bool:
    if code == "VALIDATION_ERROR":
        return (field or "").split(".")[0] in CROSS_FIELD_RULES
    return any(code in codes for codes in LEGITIMATE_REFUSALS.values())


def _not_a_uuid(name: str, value: Any) -> bool:
    if name != "id" and not name.endswith("_id"):
        return False
    try:
        uuid.UUID(str(value))
    except ValueError:
        return True
    return False


@schemathesis.check
def valid_requests_are_accepted(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """A request the document calls valid is answered 2xx/3xx, or with a listed refusal."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code < 400:
        return None
    if any(v is None or v == "None" for v in (case.path_parameters or {}).values()):
        return None  # a link whose value the earlier answer lacked: not a generated value
    if any(_not_a_uuid(k, v) for k, v in (case.path_parameters or {}).items()):
        return None  # a value a link or Location carried into an id: not schema-generated
    if response.status_code >= 500:
        return None  # not_a_server_error reports these
    try:
        body = response.json()
        if body.get("errorCode") in ("INVALID_CONTEXT", "FLAG_NOT_FOUND"):
            return None  # OFREP: no such tenant (for this caller), or no such config key
        error = body["error"]
    except (ValueError, KeyError, TypeError, AttributeError):
        raise AssertionError(f"refused a valid request: {response.status_code}") from None
    code = error["code"]
    if code in LEGITIMATE_REFUSALS.get(response.status_code, {}):
        return None
    # changes[0].value: the field is `changes`.
    fields = {d["field"].split(".")[0].split("[")[0] for d in error.get("details", [])}
    if code == "VALIDATION_ERROR" and fields and fields <= set(CROSS_FIELD_RULES):
        return None
    # A refused batch names each failing item; each must fail for a listed reason.
    items = body.get("errors") or []
    if items and all(_legitimate(item["code"], item.get("field")) for item in items):
        return None
    raise AssertionError(
        f"a valid request was refused: {response.status_code} {code}: {error['message']}"
    )
