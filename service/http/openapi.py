"""The OpenAPI 3.1 document, generated from the endpoint declarations.

Request bodies and query strings are the msgspec Structs the handlers decode with, so
the document cannot promise a shape the validation does not enforce; responses are the
Structs of service/schemas/responses.py. Error responses list the codes each operation
declares, plus the ones every operation of its kind can answer (credentials, scope, rate
limit, body format, an unavailable database).

An endpoint may refine its entry through `extra`:
- `responses`: {status: response name or None}: further statuses (None: no body), or the
  body of an error status when it is not the plain error object;
- `body_required`: False when the body may be omitted;
- `content_type`: the media type of the success body (default application/json);
- `path`: {name: JSON Schema} for path parameters the defaults below do not describe.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import msgspec
import orjson

from service.errors import STATUS_BY_CODE
from service.http.routing import Endpoint
from service.schemas.common import CONFIG_KEY_PATTERN
from service.schemas.responses import RESPONSES

REF = "#/components/schemas/{name}"
JSON = "application/json"
AUTH_CODES = ("UNAUTHORIZED", "INVALID_CREDENTIALS", "INSUFFICIENT_SCOPE", "RATE_LIMITED")
BODY_CODES = ("VALIDATION_ERROR", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE")
# Anything behind the database can meet an outage (503) or a bug (500).
SERVER_CODES = ("INTERNAL_ERROR", "SERVICE_UNAVAILABLE")
# Every authenticated POST takes an Idempotency-Key (service/http/idempotency.py).
IDEMPOTENCY_CODES = ("VALIDATION_ERROR", "IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_KEY_IN_USE")
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Send the same key again with the same request to get the first answer "
    "replayed instead of running the request twice (24 hours; 422 with another request).",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
}
_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")
_UUID = {"type": "string", "format": "uuid"}
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "key": {"type": "string", "pattern": CONFIG_KEY_PATTERN, "maxLength": 128},
}
# Response headers, described once under components.headers and referenced.
HEADERS: dict[str, dict[str, Any]] = {
    "X-Request-ID": {
        "description": "The request id (echoed from the request's X-Request-ID when valid)",
        "required": True,
        "schema": {"type": "string"},
    },
    "X-RateLimit-Limit": {
        "description": "Requests the caller's bucket holds",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Remaining": {
        "description": "Requests left in the bucket",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Reset": {
        "description": "Seconds until the bucket is full again",
        "schema": {"type": "integer"},
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
}
_RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


def _header(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/headers/{name}"}


class UnknownResponse(LookupError):
    """An endpoint names a response shape that service/schemas/responses.py lacks."""


def resolve_response(name_or_type: Any) -> Any:
    if isinstance(name_or_type, str):
        try:
            return RESPONSES[name_or_type]
        except KeyError:
            raise UnknownResponse(
                f"response {name_or_type!r} has no shape in service/schemas/responses.py"
            ) from None
    return name_or_type


def service_version() -> str:
    try:
        return metadata.version("tenant-hierarchy-service")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "0.0.0"


def openapi_path(path: str) -> str:
    """aiohttp's `{name:regex}` as OpenAPI's `{name}`."""
    return _PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


class _Schemas:
    """Collects every type the document mentions and renders them all at once."""

    def __init__(self) -> None:
        self.types: list[Any] = []

    def add(self, type_: Any) -> int:
        self.types.append(type_)
        return len(self.types) - 1

    def render(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        schemas, components = msgspec.json.schema_components(self.types, ref_template=REF)
        return list(schemas), dict(components)


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter is absent or has a value: `X | None` is just X there."""
    options = schema.get("anyOf")
    if not options:
        return schema
    kept = [o for o in options if o != {"type": "null"}]
    rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default")}
    if len(kept) == 1:
        return {**kept[0], **rest}
    return {**rest, "anyOf": kept}


def _component(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref", "")
    name = ref.rsplit("/", 1)[-1]
    found: dict[str, Any] = components[name]
    return found


def _query_parameters(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
    struct = _component(schema, components)
    required = set(struct.get("required", ()))
    return [
        {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": _without_null(prop),
        }
        for name, prop in struct.get("properties", {}).items()
    ]


def _path_parameters(endpoint: Endpoint) -> list[dict[str, Any]]:
    overrides = endpoint.extra.get("path", {})
    parameters = []
    for name in _PARAM.findall(endpoint.path):
        if name in overrides:
            schema = overrides[name]
        elif name == "id" or name.endswith(("_id", "Id")):
            schema = _UUID
        else:
            schema = PATH_PARAMETERS.get(name, {"type": "string"})
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return parameters


def _error_codes(endpoint: Endpoint) -> dict[int, list[str]]:
    codes: list[str] = list(endpoint.errors)
    if not endpoint.public:
        codes += AUTH_CODES
    if endpoint.body is not None:
        codes += BODY_CODES
    if endpoint.query is not None:
        codes.append("VALIDATION_ERROR")
    if _PARAM.search(endpoint.path):
        # A malformed id is 400; a path that matches no route at all is 404 NOT_FOUND.
        codes += ("VALIDATION_ERROR", "NOT_FOUND")
    if endpoint.path.startswith("/api/"):
        codes += SERVER_CODES
    if _takes_idempotency_key(endpoint):
        codes += IDEMPOTENCY_CODES
    by_status: dict[int, list[str]] = defaultdict(list)
    for code in dict.fromkeys(codes):
        by_status[STATUS_BY_CODE[code]].append(code)
    return dict(sorted(by_status.items()))


def _takes_idempotency_key(endpoint: Endpoint) -> bool:
    return endpoint.method == "POST" and not endpoint.public


def _headers(endpoint: Endpoint, status: int) -> dict[str, Any]:
    names = ["X-Request-ID"]
    if not endpoint.public:
        names += _RATE_HEADERS
    if status < 300 and _takes_idempotency_key(endpoint):
        names.append("Idempotent-Replayed")
    if status == 429:
        names.append("Retry-After")
    return {name: _header(name) for name in names}


def _error_schema(codes: list[str]) -> dict[str, Any]:
    return {
        "allOf": [{"$ref": REF.format(name="Error")}],
        "properties": {"error": {"properties": {"code": {"enum": codes}}}},
    }


class _Operation:
    def __init__(self, endpoint: Endpoint, schemas: _Schemas) -> None:
        self.endpoint = endpoint
        self.body = None if endpoint.body is None else schemas.add(endpoint.body)
        self.query = None if endpoint.query is None else schemas.add(endpoint.query)
        overrides = dict(endpoint.extra.get("responses", {}))
        bodies: dict[int, Any] = {endpoint.status: endpoint.response, **overrides}
        self.bodies = {
            status: None if body is None else schemas.add(resolve_response(body))
            for status, body in bodies.items()
        }
        self.error_index = schemas.add(RESPONSES["Error"])

    def render(self, rendered: list[dict[str, Any]], components: dict[str, Any]) -> dict[str, Any]:
        endpoint = self.endpoint
        operation: dict[str, Any] = {
            "operationId": endpoint.handler.__name__,
            "summary": endpoint.summary,
            "tags": [endpoint.tag],
        }
        if endpoint.admin:
            operation["description"] = "Admin scope required (GET also needs read)."
        parameters = _path_parameters(endpoint)
        if self.query is not None:
            parameters += _query_parameters(rendered[self.query], components)
        if _takes_idempotency_key(endpoint):
            parameters.append(IDEMPOTENCY_KEY)
        if parameters:
            operation["parameters"] = parameters
        if self.body is not None:
            operation["requestBody"] = {
                "required": endpoint.extra.get("body_required", True),
                "content": {JSON: {"schema": rendered[self.body]}},
            }
        if endpoint.public:
            operation["security"] = []
        operation["responses"] = self._responses(rendered)
        return operation

    def _responses(self, rendered: list[dict[str, Any]]) -> dict[str, Any]:
        endpoint = self.endpoint
        content_type = endpoint.extra.get("content_type", JSON)
        responses: dict[int, dict[str, Any]] = {}
        for status, index in self.bodies.items():
            entry: dict[str, Any] = {
                "description": endpoint.summary if status < 300 else f"HTTP {status}",
                "headers": _headers(endpoint, status),
            }
            if index is not None:
                media = content_type if status < 300 else JSON
                entry["content"] = {media: {"schema": rendered[index]}}
            responses[status] = entry
        for status, codes in _error_codes(endpoint).items():
            if status in responses:
                responses[status]["description"] = ", ".join(codes)
                continue
            responses[status] = {
                "description": ", ".join(codes),
                "headers": _headers(endpoint, status),
                "content": {JSON: {"schema": _error_schema(codes)}},
            }
        return {str(status): responses[status] for status in sorted(responses)}


class DocumentCache:
    """The document as JSON bytes, built on first use (the endpoints never change)."""

    def __init__(self) -> None:
        self._body: bytes | None = None

    def body(self, endpoints: Iterable[Endpoint]) -> bytes:
        if self._body is None:
            self._body = orjson.dumps(build_document(endpoints))
        return self._body


def build_document(endpoints: Iterable[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of these endpoints."""
    schemas = _Schemas()
    operations = [_Operation(endpoint, schemas) for endpoint in endpoints]
    rendered, components = schemas.render()
    paths: dict[str, dict[str, Any]] = defaultdict(dict)
    seen_ids: set[str] = set()
    tags: dict[str, None] = {}
    for op in operations:
        entry = op.render(rendered, components)
        if entry["operationId"] in seen_ids:  # handler names repeat across modules
            entry["operationId"] = f"{op.endpoint.tag}_{entry['operationId']}"
        seen_ids.add(entry["operationId"])
        tags[op.endpoint.tag] = None
        paths[openapi_path(op.endpoint.path)][op.endpoint.method.lower()] = entry
    # Query strings became parameters; their Structs are not bodies anyone sends.
    queries = {op.endpoint.query.__name__ for op in operations if op.endpoint.query is not None}
    used = {k: v for k, v in components.items() if k not in queries}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Tenant Hierarchy Service",
            "version": service_version(),
            "description": "A forest of tenants with inherited config and permissions. "
            "Send an API key as X-API-Key or a JWT as Authorization: Bearer.",
        },
        "tags": [{"name": tag} for tag in tags],
        "paths": dict(paths),
        "components": {
            "schemas": used,
            "headers": HEADERS,
            "securitySchemes": {
                "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "Bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
            },
        },
        "security": [{"ApiKey": []}, {"Bearer": []}],
    }
