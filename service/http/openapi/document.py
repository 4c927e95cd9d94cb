"""The OpenAPI 3.1 document, generated from the endpoint declarations.

Request bodies and query strings are the msgspec Structs the handlers decode with, so
the document cannot promise a shape the validation does not enforce; responses are the
view types each endpoint declares (service/views/). Error responses refer to
components.responses (one per status) and list the codes each operation declares, plus
the ones every operation of its kind can answer (credentials, scope, rate limit, body
format, an unavailable database).

An endpoint may refine its entry through `extra`:
- `responses`: {status: response type or None}: further statuses (None: no body), or the
  body of an error status when it is not the plain error object;
- `body_required`: False when the body may be omitted;
- `content_type`: the media type of the success body (default application/json), or a
  tuple of the types it may have;
- `headers`: {status: (header names)}: response headers beyond the common ones (ETag,
  Location, X-Next-Cursor, Retry-After; components.headers describes each);
- `request_headers`: (names): header parameters it reads (If-Match, If-None-Match);
- `path`: {name: JSON Schema} for path parameters the defaults below do not describe.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import orjson

from service.auth.authorization import required_scopes
from service.base.errors import STATUS_BY_CODE
from service.http.openapi.components import (
    HEADERS,
    JSON,
    PARAMETERS,
    RATE_HEADERS,
    REF,
    SECURITY_SCHEMES,
    error_headers,
    error_responses,
    header_ref,
    parameter_ref,
    response_ref,
)
from service.http.openapi.extras import Examples, links_of, webhooks
from service.http.openapi.schemas import (
    Schemas,
    absent_not_default,
    error_codes_as_enum,
    query_parameters,
    reachable,
)
from service.http.routing import Endpoint
from service.schemas.common import CONFIG_KEY_PATTERN
from service.views.errors import Error

AUTH_CODES = (
    "AMBIGUOUS_CREDENTIALS",
    "UNAUTHORIZED",
    "INVALID_CREDENTIALS",
    "INSUFFICIENT_SCOPE",
    "RATE_LIMITED",
)
BODY_CODES = ("VALIDATION_ERROR", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE")
# Anything behind the database can meet an outage (503) or a bug (500).
SERVER_CODES = ("INTERNAL_ERROR", "SERVICE_UNAVAILABLE")
# Every authenticated POST takes an Idempotency-Key (service/http/middlewares/idempotency.py).
IDEMPOTENCY_CODES = ("VALIDATION_ERROR", "IDEMPOTENCY_KEY_REUSED", "IDEMPOTENCY_KEY_IN_USE")
IDEMPOTENCY_KEY = parameter_ref("Idempotency-Key")
_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")
_UUID = {"type": "string", "format": "uuid"}
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "key": {"type": "string", "pattern": CONFIG_KEY_PATTERN, "maxLength": 128},
}


def check_response(type_: Any) -> Any:
    """A declared response is a type (a view, `list[...]` of one, `str`, `dict[str, Any]`)."""
    if isinstance(type_, str):
        raise TypeError(f"response {type_!r}: declare the view type itself, not its name")
    return type_


def service_version() -> str:
    try:
        return metadata.version("tenant-hierarchy-service")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "0.0.0"


def openapi_path(path: str) -> str:
    """aiohttp's `{name:regex}` as OpenAPI's `{name}`."""
    return _PARAM.sub(lambda m: "{" + m.group(1) + "}", path)


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
    if _takes_consistency_token(endpoint):
        codes.append("VALIDATION_ERROR")
    by_status: dict[int, list[str]] = defaultdict(list)
    for code in dict.fromkeys(codes):
        by_status[STATUS_BY_CODE[code]].append(code)
    return dict(sorted(by_status.items()))


def _takes_consistency_token(endpoint: Endpoint) -> bool:
    return endpoint.method in ("GET", "HEAD") and not endpoint.public


def _gives_consistency_token(endpoint: Endpoint) -> bool:
    reads = endpoint.method in ("GET", "HEAD", "OPTIONS") or endpoint.read_scope
    return not reads and not endpoint.public


def _takes_idempotency_key(endpoint: Endpoint) -> bool:
    return endpoint.method == "POST" and not endpoint.public


def describe(endpoint: Endpoint) -> str:
    """The operation's description: its summary, the credentials it needs, and the
    conditional answer of a read that takes If-None-Match."""
    if endpoint.public:
        needs = "No credentials needed."
    else:
        method = "GET" if endpoint.read_scope else endpoint.method  # a POST that only reads
        scopes = required_scopes(method, endpoint.admin)
        needs = f"Needs the {' and '.join(scopes)} scope{'s' if len(scopes) > 1 else ''}."
    parts = [endpoint.summary.rstrip(".") + ".", needs]
    if "X-Next-Cursor" in endpoint.extra.get("headers", {}).get(endpoint.status, ()):
        # The body is a bare array: generated clients expose the cursor only as a header.
        parts.append(
            "Paged by header: the answer's X-Next-Cursor (absent on the last page) is the "
            "`cursor` of the next request; Link names the same next page. A generated "
            "client reads it from the raw answer's headers (openapi-python-client: "
            "`sync_detailed(...).headers`; openapi-fetch: `response.headers`)."
        )
    if "If-None-Match" in endpoint.extra.get("request_headers", ()):
        # Not listed under responses: generated clients type a body-less status as `Any`,
        # which swallows the whole answer type.
        parts.append(
            "With an If-None-Match that names the current ETag (or `*`) the answer is "
            "304 Not Modified: no body, the ETag header only."
        )
    return " ".join(parts)


def _headers(endpoint: Endpoint, status: int) -> dict[str, Any]:
    names = ["X-Request-ID"]
    if not endpoint.public:
        names += RATE_HEADERS
    if status < 300 and _takes_idempotency_key(endpoint):
        names.append("Idempotent-Replayed")
    if status < 300 and _gives_consistency_token(endpoint):
        names += ["X-Consistency-Token", "X-Revision"]
    names += endpoint.extra.get("headers", {}).get(status, ())
    return {name: header_ref(name) for name in names}


class _Operation:
    def __init__(self, endpoint: Endpoint, schemas: Schemas) -> None:
        self.endpoint = endpoint
        self.body = None if endpoint.body is None else schemas.add(endpoint.body)
        self.query = None if endpoint.query is None else schemas.add(endpoint.query)
        overrides = dict(endpoint.extra.get("responses", {}))
        bodies: dict[int, Any] = {endpoint.status: endpoint.response, **overrides}
        self.bodies = {
            status: None if body is None else schemas.add(check_response(body))
            for status, body in bodies.items()
        }
        schemas.add(Error)  # the component every error response refers to

    def render(self, rendered: list[dict[str, Any]], components: dict[str, Any]) -> dict[str, Any]:
        endpoint = self.endpoint
        operation: dict[str, Any] = {
            "operationId": endpoint.handler.__name__,
            "summary": endpoint.summary,
            "tags": [endpoint.tag],
        }
        operation["description"] = describe(endpoint)
        parameters = _path_parameters(endpoint)
        if self.query is not None:
            parameters += query_parameters(rendered[self.query], components)
        if _takes_idempotency_key(endpoint):
            parameters.append(IDEMPOTENCY_KEY)
        if _takes_consistency_token(endpoint):
            parameters.append(parameter_ref("X-Consistency-Token"))
        parameters += [parameter_ref(h) for h in endpoint.extra.get("request_headers", ())]
        parameters.append(parameter_ref("X-Request-ID"))
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
                types = (media,) if isinstance(media, str) else media
                entry["content"] = {t: {"schema": rendered[index]} for t in types}
            responses[status] = entry
        for status, codes in _error_codes(endpoint).items():
            if status in responses:
                responses[status]["description"] = ", ".join(codes)
                responses[status]["headers"] = error_headers(status)
                continue
            responses[status] = response_ref(status, codes)
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
    schemas = Schemas()
    operations = [_Operation(endpoint, schemas) for endpoint in endpoints]
    rendered, components = schemas.render()
    error_codes_as_enum(components)
    paths: dict[str, dict[str, Any]] = defaultdict(dict)
    seen_ids: set[str] = set()
    tags: dict[str, dict[str, None]] = {}
    for op in operations:
        entry = op.render(rendered, components)
        if entry["operationId"] in seen_ids:  # handler names repeat across modules
            entry["operationId"] = f"{op.endpoint.tag}_{entry['operationId']}"
        seen_ids.add(entry["operationId"])
        tags.setdefault(op.endpoint.tag, {})[_module_summary(op.endpoint)] = None
        paths[openapi_path(op.endpoint.path)][op.endpoint.method.lower()] = entry
    # Query strings became parameters; their Structs are not bodies anyone sends.
    queries = {op.endpoint.query.__name__ for op in operations if op.endpoint.query is not None}
    used = {k: v for k, v in components.items() if k not in queries}
    bodies = [op.endpoint.body for op in operations if op.endpoint.body is not None]
    for name in sorted(reachable([{"$ref": REF.format(name=b.__name__)} for b in bodies], used)):
        used[name] = absent_not_default(used[name])
    statuses = {
        int(status)
        for item in paths.values()
        for operation in item.values()
        for status, response in operation["responses"].items()
        if "$ref" in response
    }
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "Tenant Hierarchy Service",
            "version": service_version(),
            "description": "A forest of tenants with inherited config and permissions. "
            "Send an API key as X-API-Key or a JWT as Authorization: Bearer, not both.",
            "license": {"name": "Proprietary", "identifier": "LicenseRef-Proprietary"},
            "contact": {"name": "The Tenant Hierarchy Service team"},
        },
        # Relative: the document is served by the service it describes, at its root.
        "servers": [{"url": "/"}],
        "tags": [
            {"name": tag, "description": " ".join(t for t in texts if t) or tag}
            for tag, texts in tags.items()
        ],
        "paths": dict(paths),
        "components": {
            "schemas": used,
            "responses": error_responses(statuses),
            "parameters": PARAMETERS,
            "headers": HEADERS,
            "securitySchemes": SECURITY_SCHEMES,
        },
        "security": [{"ApiKey": []}, {"Bearer": []}],
    }
    _add_examples_and_links(document, endpoints_of(operations))
    return document


_DOC_REFERENCE = re.compile(r"\s*\((?:see )?docs/[^)]*\)")


def _module_summary(endpoint: Endpoint) -> str:
    """The first sentence of the docstring of the module declaring the endpoint (its
    references to docs/ left out): the description of the endpoint's tag."""
    module = sys.modules.get(endpoint.handler.__module__)
    text = " ".join(((module.__doc__ if module else None) or "").split("\n\n")[0].split())
    text = _DOC_REFERENCE.sub("", text)
    first = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
    return first if first.endswith(".") or not first else first + "."


def endpoints_of(operations: list[_Operation]) -> list[Endpoint]:
    return [op.endpoint for op in operations]


def _add_examples_and_links(document: dict[str, Any], endpoints: list[Endpoint]) -> None:
    """An example beside every body schema, links from each create, and the events."""
    components = document["components"]
    examples = Examples(components["schemas"])
    for response in components["responses"].values():
        _example_each(response.get("content", {}), examples)
    paths = document["paths"]
    for endpoint in endpoints:
        operation = paths[openapi_path(endpoint.path)][endpoint.method.lower()]
        if "requestBody" in operation:
            _example_each(operation["requestBody"]["content"], examples)
        for response in operation["responses"].values():
            _example_each(response.get("content", {}), examples)
        if endpoint.method == "POST" and endpoint.status == 201 and "{" not in endpoint.path:
            links = links_of(endpoint.path, paths)
            if links:
                operation["responses"][str(endpoint.status)]["links"] = links
    document["webhooks"] = webhooks(examples)


def _example_each(content: dict[str, Any], examples: Examples) -> None:
    for media in content.values():
        if "example" not in media:  # the shared error responses bring their own
            media["example"] = examples.of(media["schema"])
