"""The OpenAPI document: one entry per registered route and no more, valid OpenAPI 3.1,
built from the same Structs the handlers decode with, served without credentials."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from openapi_spec_validator import validate

from service.app import apis
from service.base.errors import STATUS_BY_CODE
from service.http.appkeys import ENDPOINTS
from service.http.openapi.document import (
    IDEMPOTENCY_KEY,
    REF,
    build_document,
    check_response,
    openapi_path,
)
from service.http.openapi.schemas import absent_not_default

METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}


def registered_routes(app: web.Application) -> set[tuple[str, str]]:
    """(method, path) of every route the router really holds."""
    routes = set()
    for route in app.router.routes():
        resource = route.resource
        assert resource is not None
        if route.method in ("HEAD", "OPTIONS", "*"):
            continue  # HEAD is GET without a body; OPTIONS answers Allow, "*" 405s
        routes.add((route.method.lower(), openapi_path(resource.canonical)))
    return routes


def documented_operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, item in document["paths"].items()
        for method in item
        if method in METHODS
    }


@pytest.fixture
async def document(client: TestClient) -> dict[str, Any]:
    resp = await client.get("/api/v1/openapi.json")  # no credentials
    assert resp.status == 200
    assert resp.content_type == "application/json"
    data: dict[str, Any] = await resp.json()
    return data


async def test_every_route_has_an_entry_and_every_entry_a_route(
    client: TestClient, document: dict[str, Any]
) -> None:
    routes = registered_routes(client.app)
    operations = documented_operations(document)
    assert routes - operations == set(), "registered routes missing from the document"
    assert operations - routes == set(), "documented operations without a route"
    assert ("get", "/api/v1/openapi.json") in operations
    assert ("get", "/metrics") in operations


async def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.1.0"
    validate(document)  # raises on any violation of the OpenAPI 3.1 schema


def test_a_route_missing_from_the_document_is_noticed() -> None:
    """The comparison above is not vacuous: drop one endpoint and it shows."""
    app = web.Application()
    from service.http.routing import register

    table = register(app, apis())
    kept = [e for e in table.values() if e.path != "/api/v1/tenants/{id}/move"]
    routes = registered_routes(app)
    assert routes - documented_operations(build_document(kept)) == {
        ("post", "/api/v1/tenants/{id}/move")
    }


def test_every_declared_response_has_a_shape() -> None:
    missing = []
    for api in apis():
        for endpoint in api.endpoints:
            bodies = [endpoint.response, *endpoint.extra.get("responses", {}).values()]
            for body in bodies:
                if isinstance(body, str):
                    missing.append(f"{endpoint.method} {endpoint.path}: {body} is a name")
                bodiless = endpoint.status == 204 or 300 <= endpoint.status < 400
                if body is None and not bodiless and body is endpoint.response:
                    missing.append(f"{endpoint.method} {endpoint.path}: no response declared")
    assert missing == [], "declare each response as its view type"


async def test_operations_use_the_structs_the_handlers_decode(
    client: TestClient, document: dict[str, Any]
) -> None:
    components = document["components"]["schemas"]
    for endpoint in client.app[ENDPOINTS].values():
        operation = document["paths"][openapi_path(endpoint.path)][endpoint.method.lower()]
        if endpoint.body is not None:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert schema == {"$ref": REF.format(name=endpoint.body.__name__)}
            # The component is msgspec's own schema of that Struct, unknown fields refused,
            # with each default said in words (a `default` makes a field required to
            # openapi-typescript).
            _, expected = msgspec.json.schema_components([endpoint.body], ref_template=REF)
            name = endpoint.body.__name__
            assert components[name] == absent_not_default(expected[name])
            assert not any("default" in p for p in components[name].get("properties", {}).values())
            assert components[name]["additionalProperties"] is False
        if endpoint.query is not None:
            documented = {p["name"] for p in operation["parameters"] if p.get("in") == "query"}
            assert documented == set(endpoint.query.__struct_encode_fields__)
        success = operation["responses"][str(endpoint.status)]
        if endpoint.status == 204 or 300 <= endpoint.status < 400:
            assert "content" not in success
        else:
            check_response(endpoint.response)
            assert success["content"], endpoint.path
        for code in endpoint.errors:
            status = str(STATUS_BY_CODE[code])
            assert code in operation["responses"][status]["description"], (endpoint.path, code)
        if not endpoint.public:
            assert "security" not in operation  # the document-wide key-or-JWT requirement
            assert "UNAUTHORIZED" in operation["responses"]["401"]["description"]
            assert "AMBIGUOUS_CREDENTIALS" in operation["responses"]["400"]["description"]
            assert "RATE_LIMITED" in operation["responses"]["429"]["description"]
        else:
            assert operation["security"] == []


async def test_a_tenant_entry_in_full(document: dict[str, Any]) -> None:
    operation = document["paths"]["/api/v1/tenants/{id}/move"]["post"]
    assert operation["operationId"] == "move_tenant"
    assert operation["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string",
                                                                  "format": "uuid"}},
        IDEMPOTENCY_KEY,
        {"$ref": "#/components/parameters/If-Match"},
        {"$ref": "#/components/parameters/X-Request-ID"},
    ]  # fmt: skip
    assert operation["requestBody"]["required"] is True
    responses = operation["responses"]
    assert sorted(responses) == ["200", "400", "401", "403", "404", "409", "410", "412",
                                 "413", "415", "422", "429", "500", "503"]  # fmt: skip
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Tenant"
    }
    assert responses["200"]["headers"]["ETag"] == {"$ref": "#/components/headers/ETag"}
    # Errors refer to the one response of their status and name this operation's codes.
    assert responses["409"] == {
        "$ref": "#/components/responses/Conflict",
        "description": "CYCLE_DETECTED, DEPTH_LIMIT_EXCEEDED, ROLE_OUTSIDE_SUBTREE, "
        "CONFIG_SCHEMA_CONFLICT, BUDGET_EXCEEDED, IDEMPOTENCY_KEY_IN_USE",
    }
    shared = document["components"]["responses"]
    conflict = shared["Conflict"]["content"]["application/json"]
    # One complete object: the Error schema itself, with an example of that status.
    assert conflict["schema"] == {"$ref": "#/components/schemas/Error"}
    assert conflict["example"]["error"]["code"] == "WEBHOOK_INACTIVE"
    assert {"CYCLE_DETECTED", "CONFLICT", "IDEMPOTENCY_KEY_IN_USE"} <= set(
        shared["Conflict"]["description"].removeprefix("HTTP 409: ").split(", ")
    )
    schemas = document["components"]["schemas"]
    # Every code of the registry, whichever branch added it, and nothing else.
    assert schemas["ErrorCode"]["enum"] == list(STATUS_BY_CODE)
    assert schemas["ErrorDetail"]["properties"]["code"] == {
        "$ref": "#/components/schemas/ErrorCode"
    }
    retry_after = shared["TooManyRequests"]["headers"]["Retry-After"]
    assert retry_after == {"$ref": "#/components/headers/Retry-After"}
    tenant = document["components"]["schemas"]["Tenant"]
    assert tenant["additionalProperties"] is False
    # Every field is always present, but for the child counts lists may ask for.
    assert set(tenant["required"]) == set(tenant["properties"]) - {"child_count"}
    assert tenant["properties"]["deleted_at"] == {
        "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]
    }
    listing = [p for p in document["paths"]["/api/v1/tenants"]["get"]["parameters"] if "name" in p]
    assert {p["name"]: p["schema"] for p in listing}["limit"] == {
        "type": "integer", "minimum": 1, "maximum": 100, "default": 50
    }  # fmt: skip
    assert {p["name"]: p["schema"] for p in listing}["cursor"] == {
        "type": "string", "format": "uuid"
    }  # fmt: skip


async def test_the_served_document_is_the_generated_one(
    client: TestClient, document: dict[str, Any]
) -> None:
    assert document == build_document(client.app[ENDPOINTS].values())
    again = await client.get("/api/v1/openapi.json", headers={"X-API-Key": "ignored"})
    assert again.status == 200
    assert await again.json() == document


async def test_security_schemes_state_the_one_credential_rule(document: dict[str, Any]) -> None:
    schemes = document["components"]["securitySchemes"]
    assert sorted(schemes) == ["ApiKey", "Bearer"]
    assert (schemes["ApiKey"]["in"], schemes["ApiKey"]["name"]) == ("header", "X-API-Key")
    assert (schemes["Bearer"]["scheme"], schemes["Bearer"]["bearerFormat"]) == ("bearer", "JWT")
    for scheme in schemes.values():
        assert "400 AMBIGUOUS_CREDENTIALS" in scheme["description"]
    assert document["security"] == [{"ApiKey": []}, {"Bearer": []}]


def test_errors_are_shared_and_the_document_stays_small(document: dict[str, Any]) -> None:
    """The same error schemas once per status, not once per operation: 355,612 bytes
    before components.responses, about 148,000 after (measured)."""
    import orjson

    # About 261,000 with the examples, GET / and /api/v1/me and a description for every
    # operation and tag (measured: 260,898); context delivery, OFREP and X-Revision on
    # every write add about 20,000, value schemas, budgets and their events about 34,000,
    # change requests, protected subtrees and their events about 58,000 (measured with
    # all of them: 401,639).
    assert len(orjson.dumps(document)) < 420_000
    assert document["servers"] == [{"url": "/"}]
    for item in document["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                if int(status) >= 400 and "content" in response:
                    # The error bodies that are not the plain Error object.
                    assert response["content"]["application/json"]["schema"] in (
                        {"$ref": "#/components/schemas/TenantBatchError"},
                        {"$ref": "#/components/schemas/Readiness"},
                        {"$ref": "#/components/schemas/ReadReadiness"},
                        {"$ref": "#/components/schemas/ImpactDriftError"},
                        # OFREP's own failure shapes
                        {"$ref": "#/components/schemas/OfrepFlagNotFound"},
                    ) or response["content"]["application/json"]["schema"].get("title") == (
                        "OfrepBadRequest"
                    ), status


HEADER_USE = {
    ("post", "/api/v1/tenants", "201"): {"ETag", "Location", "Idempotent-Replayed"},
    ("get", "/api/v1/tenants/{id}", "200"): {"ETag"},
    ("patch", "/api/v1/tenants/{id}", "200"): {"ETag"},
    ("post", "/api/v1/tenants/{id}/move", "200"): {"ETag", "Idempotent-Replayed"},
    ("get", "/api/v1/tenants/{id}/children", "200"): {"X-Next-Cursor", "Link"},
    ("get", "/api/v1/tenants/{id}/descendants", "200"): {"X-Next-Cursor", "Link"},
    ("get", "/api/v1/tenants", "200"): {"Link"},
    ("get", "/api/v1/api-keys", "200"): {"Link"},
    ("get", "/api/v1/tenants/{id}/context", "200"): {"ETag"},
    ("put", "/api/v1/tenants/{id}/config/{key}", "201"): {"Location"},
    ("put", "/api/v1/tenants/{id}/permissions/{key}", "201"): {"Location"},
    ("post", "/api/v1/api-keys", "201"): {"Location", "Idempotent-Replayed"},
    ("post", "/api/v1/roles", "201"): {"Location", "Idempotent-Replayed"},
    ("post", "/api/v1/webhooks", "201"): {"Location", "Idempotent-Replayed"},
    ("get", "/api/v1/audit-logs", "200"): {"X-Next-Cursor", "Link"},
    ("get", "/api/v1/webhooks/deliveries/failed", "200"): {"X-Next-Cursor", "Link"},
    ("get", "/ready", "503"): {"Retry-After"},
}
REQUEST_HEADERS = {
    ("get", "/api/v1/tenants/{id}"): {"If-None-Match"},
    ("get", "/api/v1/tenants/{id}/context"): {"If-None-Match"},
    ("patch", "/api/v1/tenants/{id}"): {"If-Match"},
    ("delete", "/api/v1/tenants/{id}"): {"If-Match"},
    ("post", "/api/v1/tenants/{id}/move"): {"If-Match", "Idempotency-Key"},
    ("post", "/api/v1/tenants"): {"Idempotency-Key"},
}


async def test_every_header_is_declared_where_it_is_used(document: dict[str, Any]) -> None:
    common = {
        "X-Request-ID",
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
        "RateLimit-Policy",
        "RateLimit",
    }
    for (method, path, status), names in HEADER_USE.items():
        declared = set(document["paths"][path][method]["responses"][status]["headers"])
        if method != "get" and status.startswith("2"):
            names = names | {"X-Consistency-Token", "X-Revision"}  # every successful write
        assert declared - common == names, (method, path, status)
    for (method, path), names in REQUEST_HEADERS.items():
        refs = [p["$ref"] for p in document["paths"][path][method]["parameters"] if "$ref" in p]
        found = {ref.rsplit("/", 1)[-1] for ref in refs}
        if method == "get":
            names = names | {"X-Consistency-Token"}  # a read may ask for a write it follows
        assert found == names | {"X-Request-ID"}, (method, path)
    limited = document["components"]["responses"]["TooManyRequests"]["headers"]
    assert limited["Retry-After"] == {"$ref": "#/components/headers/Retry-After"}
    assert set(limited) == common | {"Retry-After"}


def _media_types(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            body = operation.get("requestBody", {}).get("content", {})
            found += [(f"{method} {path} body", media) for media in body.values()]
            for status, response in operation["responses"].items():
                content = response.get("content", {})
                found += [(f"{method} {path} {status}", media) for media in content.values()]
    for name, response in document["components"]["responses"].items():
        found += [(name, media) for media in response["content"].values()]
    for event, item in document["webhooks"].items():
        found.append((event, item["post"]["requestBody"]["content"]["application/json"]))
    return found


async def test_every_body_has_an_example_that_fits_its_schema(document: dict[str, Any]) -> None:
    from openapi_schema_validator import OAS31Validator

    components = document["components"]
    media_types = _media_types(document)
    assert len(media_types) > 100
    wrong = []
    for where, media in media_types:
        assert "example" in media, where
        validator = OAS31Validator({**media["schema"], "components": components})
        wrong += [f"{where}: {e.message}" for e in validator.iter_errors(media["example"])]
    assert wrong == []


async def test_creates_link_to_the_operations_on_their_id(document: dict[str, Any]) -> None:
    paths = document["paths"]
    links = paths["/api/v1/tenants"]["post"]["responses"]["201"]["links"]
    assert links["get_tenant"] == {
        "operationId": "get_tenant",
        "parameters": {"id": "$response.body#/id"},
    }
    assert {"move_tenant", "list_ancestors", "list_descendants", "get_context"} <= set(links)
    for create in ("/api/v1/api-keys", "/api/v1/roles", "/api/v1/webhooks"):
        created = paths[create]["post"]["responses"]["201"]["links"]
        expected = {
            operation["operationId"]
            for path, item in paths.items()
            if path.startswith(create + "/{id}") and path.count("{") == 1
            for operation in item.values()
        }
        assert set(created) == expected != set(), create
    operation_ids = {op["operationId"] for item in paths.values() for op in item.values()}
    for item in paths.values():
        for operation in item.values():
            for response in operation["responses"].values():
                assert set(response.get("links", {})) <= operation_ids


async def test_every_event_type_is_described_under_webhooks(document: dict[str, Any]) -> None:
    from service.schemas.webhooks import TEST_EVENT, EventType

    # Every event, and the test a webhook can be sent on request.
    assert set(document["webhooks"]) == {*EventType.__args__, TEST_EVENT}
    test = document["webhooks"][TEST_EVENT]["post"]["requestBody"]["content"]["application/json"]
    assert test["example"]["event"] == TEST_EVENT
    moved = document["webhooks"]["tenant.moved"]["post"]
    envelope = moved["requestBody"]["content"]["application/json"]["schema"]
    assert envelope["required"] == ["event_id", "event", "timestamp", "data"]
    assert envelope["properties"]["event"] == {"const": "tenant.moved"}
    headers = {p["name"] for p in moved["parameters"]}
    assert {"webhook-id", "webhook-timestamp", "webhook-signature"} <= headers


async def test_the_consistency_token_is_documented(document: dict[str, Any]) -> None:
    write = document["paths"]["/api/v1/tenants"]["post"]["responses"]["201"]["headers"]
    assert write["X-Consistency-Token"] == {"$ref": "#/components/headers/X-Consistency-Token"}
    assert "X-Consistency-Token" in document["components"]["headers"]
    read = document["paths"]["/api/v1/tenants/{id}"]["get"]
    assert {"$ref": "#/components/parameters/X-Consistency-Token"} in read["parameters"]
    assert "VALIDATION_ERROR" in read["responses"]["400"]["description"]
    assert "X-Consistency-Token" not in read["responses"]["200"]["headers"]
