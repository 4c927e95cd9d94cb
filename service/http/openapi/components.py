"""The parts of the OpenAPI document every operation shares: security schemes, headers,
header parameters, and one error response per status (components.responses).

Error responses are described once per status with every code that status can carry; an
operation refers to them and names its own codes in the reference's description (a 3.1
Reference Object may override `description`), so the document is not the same error
schema repeated per operation. Each is the plain Error object, whose `code` is the enum of
every code of service/base/errors.py: one type for generated clients to decode every error with.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from service.base.errors import STATUS_BY_CODE

REF = "#/components/schemas/{name}"
JSON = "application/json"
_ONE_CREDENTIAL = (
    " Send one credential: a request with both X-API-Key and Authorization (whatever"
    " their values) is refused with 400 AMBIGUOUS_CREDENTIALS."
)
SECURITY_SCHEMES = {
    "ApiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "An API key (sk_live_... or sk_test_...), optionally restricted to"
        " a tenant's subtree." + _ONE_CREDENTIAL,
    },
    "Bearer": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": "A JWT in Authorization: Bearer: HS256 signed with the deployment's"
        " JWT_SECRET, or an access token of the configured OpenID Connect provider"
        " (RS256, ES256, EdDSA, ... per JWT_ALGORITHMS; keys from its JWKS). Scopes come"
        " from `scopes`, `scope` or `scp` (or JWT_SCOPES_CLAIM, through JWT_SCOPE_MAP); a"
        " `tenant_id` claim (JWT_TENANT_CLAIM) restricts the token to that tenant's"
        " subtree, as a tenant-scoped key is. 503 SERVICE_UNAVAILABLE when the provider's"
        " keys cannot be had." + _ONE_CREDENTIAL,
    },
}
_ETAG = {"type": "string", "pattern": '^(W/)?"[!#-~]*"$'}
# Entity tags, comma-separated, or `*`. Any other text is not refused (it matches no
# tag), so the schema is a plain string: a pattern would promise a refusal that never comes.
_ENTITY_TAGS = {"type": "string"}
# Request headers, described once under components.parameters and referenced.
PARAMETERS: dict[str, dict[str, Any]] = {
    "Idempotency-Key": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "Send the same key again with the same request to get the first "
        "answer replayed instead of running the request twice (24 hours; 422 with another "
        "request).",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
        "example": "3f0c8a52-create-acme",
    },
    "If-Match": {
        "name": "If-Match",
        "in": "header",
        "required": False,
        "description": "Change only if the tenant's current ETag is one of these (or `*`); "
        "412 PRECONDITION_FAILED otherwise.",
        "schema": _ENTITY_TAGS,
        "example": '"5d41402abc4b2a76b9719d911017c592"',
    },
    "If-None-Match": {
        "name": "If-None-Match",
        "in": "header",
        "required": False,
        "description": "304 Not Modified, without a body, when the current ETag is one of "
        "these (or `*`).",
        "schema": _ENTITY_TAGS,
        "example": '"5d41402abc4b2a76b9719d911017c592"',
    },
    "X-Request-ID": {
        "name": "X-Request-ID",
        "in": "header",
        "required": False,
        "description": "A request id to log and echo back: 1 to 128 of A-Z a-z 0-9 . _ : -"
        " (any other value is not refused but replaced by a new id).",
        "schema": {"type": "string"},
        "example": "checkout-7f3a",
    },
}
PARAMETERS["X-Consistency-Token"] = {
    "name": "X-Consistency-Token",
    "in": "header",
    "required": False,
    "description": "The X-Consistency-Token of an earlier write's answer: this read is then "
    "served only by a database server that has that write (a caught-up read replica or "
    "the primary). Opaque; a value this service did not issue is 400 VALIDATION_ERROR.",
    # A version byte (2), an 8-byte WAL position and a 16-byte HMAC tag, base64url
    # without padding.
    "schema": {"type": "string", "pattern": "^A[g-v][A-Za-z0-9_-]{32}$"},
    "example": "AgAAAAABazdIH-j4E2no9uj-EdWlhZ4N5w",
}
PARAMETERS["Last-Event-ID"] = {
    "name": "Last-Event-ID",
    "in": "header",
    "required": False,
    "description": "The id of the last event received (`<revision>:<index>`, or a bare "
    "revision): the stream goes on after it. Wins over `since`. Empty (or blank) means no "
    "position, as when an EventSource has received no id yet.",
    "schema": {"type": "string", "pattern": "^\\s*([0-9]{1,18}(:[0-9]{1,9})?)?\\s*$"},
    "example": "42:0",
}
# Response headers, described once under components.headers and referenced.
HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "The request id (echoed from the request's X-Request-ID when valid)",
        "required": True,
        "schema": {"type": "string"},
    },
    "X-RateLimit-Limit": {
        "description": "Requests the caller's bucket holds (authenticated requests)",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Remaining": {
        "description": "Requests left in the bucket (authenticated requests)",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Reset": {
        "description": "Seconds (a delay, not a Unix time) until Remaining grows by one: "
        "the bucket refills continuously, Limit requests per window, so this is not when "
        "a whole window ends; 0 when the bucket is full; equal to Retry-After on a 429 "
        "(authenticated requests)",
        "schema": {"type": "integer", "minimum": 0},
    },
    "RateLimit-Policy": {
        "description": 'The quota (IETF RateLimit draft): `"default";q=<limit>;w=<window seconds>`',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'Where the caller stands: `"default";r=<remaining>;t=<reset seconds>`',
        "schema": {"type": "string"},
    },
    "X-Consistency-Token": {
        "description": "Where this write landed in the database's log, opaque: send it back "
        "as X-Consistency-Token on later reads to be sure to read this write",
        "schema": {"type": "string"},
    },
    "X-Revision": {
        "description": "The newest revision of tenant data when the answer was made (on a "
        "write: at or past the write's own): a stream of context changes that reached it "
        "shows everything committed before. On a batch context read: a revision every "
        "context in the answer reflects at least (docs/context-delivery.md)",
        "schema": {"type": "integer", "minimum": 0},
    },
    "Link": {
        "description": 'The next page (RFC 8288, rel="next"); absent on the last page',
        "schema": {"type": "string"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when the answer replays the first answer to this Idempotency-Key",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Retry-After": {
        "description": "Whole seconds until a request can pass",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "Retry-After-Optional": {
        "description": "Whole seconds until a request can pass (when the cause is passing)",
        "schema": {"type": "integer", "minimum": 1},
    },
    "ETag": {
        "description": "The strong entity tag of this representation (for If-None-Match "
        "and If-Match)",
        "required": True,
        "schema": _ETAG,
    },
    "Location": {
        "description": "The address of the created resource",
        "required": True,
        "schema": {"type": "string", "format": "uri-reference"},
    },
    "WWW-Authenticate": {
        "description": "The scheme to authenticate with (RFC 9110, RFC 6750): `Bearer` "
        "when the request sent a JWT, this service's own `ApiKey` scheme when it sent "
        'X-API-Key, both when it sent neither; `error="invalid_token"` on a 401 for a '
        'credential that is not accepted, `error="insufficient_scope"` on a 403. Example: '
        '`ApiKey realm="tenant-service", error="insufficient_scope"`',
        "required": True,
        "schema": {"type": "string"},
    },
    "X-Next-Cursor": {
        "description": "The cursor of the next page (absent on the last page): send it "
        "back as the `cursor` query parameter, with the same other parameters",
        "schema": {"type": "string", "format": "uuid"},
        "example": "0192f4a0-7c1e-7d3a-9b1f-000000000001",
    },
}
RATE_HEADERS = (
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "RateLimit-Policy",
    "RateLimit",
)
# Statuses whose errors may carry Retry-After: 503 (an outage) and 409 (a request with
# the same Idempotency-Key still running).
_MAY_RETRY = (409, 503)


def header_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


def parameter_ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/parameters/{name}"}


# Spelled out: http.HTTPStatus renames some phrases across Python versions (413, 422).
_RESPONSE_NAMES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    412: "PreconditionFailed",
    413: "ContentTooLarge",
    415: "UnsupportedMediaType",
    422: "UnprocessableContent",
    429: "TooManyRequests",
    500: "InternalServerError",
    503: "ServiceUnavailable",
}


def response_name(status: int) -> str:
    """`NotFound` for 404: the component name of that status's error answer."""
    return _RESPONSE_NAMES.get(status) or f"Error{status}"


def response_ref(status: int, codes: list[str]) -> dict[str, str]:
    return {
        "$ref": f"#/components/responses/{response_name(status)}",
        "description": ", ".join(codes),
    }


def error_code_schema() -> dict[str, Any]:
    """Every documented error code, from the registry in service/base/errors.py (a code added
    there is listed here without anyone touching the document)."""
    return {
        "type": "string",
        "enum": list(STATUS_BY_CODE),
        "description": "The error's code; each response lists the codes its status carries.",
    }


def error_example(status: int, code: str) -> dict[str, Any]:
    """A complete error body of this status (the `details` of a 400 name each bad field)."""
    error: dict[str, Any] = {
        "code": code,
        "message": "what went wrong, in a sentence",
        "request_id": "3f2a9c1e7b4d4f6a8e0c2b5d7f9a1c3e",
    }
    if status == 400:
        error["details"] = [
            {"field": "name", "message": "expected a string of 1 to 255 characters"},
            {"field": "slug", "message": "expected `^[a-z0-9][a-z0-9_-]*$`"},
        ]
    return {"error": error}


def error_headers(status: int) -> dict[str, Any]:
    headers = {name: header_ref(name) for name in ("X-Request-ID", *RATE_HEADERS)}
    if status in (401, 403):
        headers["WWW-Authenticate"] = header_ref("WWW-Authenticate")
    if status == 429:
        headers["Retry-After"] = header_ref("Retry-After")
    elif status in _MAY_RETRY:
        headers["Retry-After"] = header_ref("Retry-After-Optional")
    return headers


def error_responses(statuses: set[int]) -> dict[str, Any]:
    """One response per error status: the Error body with every code of that status."""
    codes: dict[int, list[str]] = defaultdict(list)
    for code, status in STATUS_BY_CODE.items():
        codes[status].append(code)
    responses = {}
    for status in sorted(statuses):
        # One complete object per status (no allOf with a partial override), so
        # validators check the example against exactly the schema a client decodes with.
        media = {"schema": {"$ref": REF.format(name="Error")}}
        media["example"] = error_example(status, codes[status][0])
        responses[response_name(status)] = {
            "description": f"HTTP {status}: " + ", ".join(codes[status]),
            "headers": error_headers(status),
            "content": {JSON: media},
        }
    return responses
