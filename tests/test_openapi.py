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
from service.errors import STATUS_BY_CODE
from service.http.appkeys import ENDPOINTS
from service.http.openapi import (
    IDEMPOTENCY_KEY,
    REF,
    build_document,
    openapi_path,
    resolve_response,
)
from service.schemas.responses import RESPONSES

METHODS = {"get", "put", "post", "delete", "patch", "options", "head", "trace"}


def registered_routes(app: web.Application) -> set[tuple[str, str]]:
    """(method, path) of every route the router really holds."""
    routes = set()
    for route in app.router.routes():
        resource = route.resource
        assert resource is not None
        if route.method == "HEAD":
            continue  # aiohttp adds HEAD beside GET; HEAD is GET without a body
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
                if isinstance(body, str) and body not in RESPONSES:
                    missing.append(f"{endpoint.method} {endpoint.path}: {body}")
                bodiless = endpoint.status == 204 or 300 <= endpoint.status < 400
                if body is None and not bodiless and body is endpoint.response:
                    missing.append(f"{endpoint.method} {endpoint.path}: no response declared")
    assert missing == [], "add these shapes to service/schemas/responses.py"


async def test_operations_use_the_structs_the_handlers_decode(
    client: TestClient, document: dict[str, Any]
) -> None:
    components = document["components"]["schemas"]
    for endpoint in client.app[ENDPOINTS].values():
        operation = document["paths"][openapi_path(endpoint.path)][endpoint.method.lower()]
        if endpoint.body is not None:
            schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert schema == {"$ref": REF.format(name=endpoint.body.__name__)}
            # The component is msgspec's own schema of that Struct, unknown fields refused.
            _, expected = msgspec.json.schema_components([endpoint.body], ref_template=REF)
            name = endpoint.body.__name__
            assert components[name] == expected[name]
            assert components[name]["additionalProperties"] is False
        if endpoint.query is not None:
            documented = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
            assert documented == set(endpoint.query.__struct_encode_fields__)
        success = operation["responses"][str(endpoint.status)]
        if endpoint.status == 204 or 300 <= endpoint.status < 400:
            assert "content" not in success
        else:
            resolve_response(endpoint.response)
            assert success["content"], endpoint.path
        for code in endpoint.errors:
            status = str(STATUS_BY_CODE[code])
            assert code in operation["responses"][status]["description"], (endpoint.path, code)
        if not endpoint.public:
            assert "security" not in operation  # the document-wide key-or-JWT requirement
            assert "UNAUTHORIZED" in operation["responses"]["401"]["description"]
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
    ]  # fmt: skip
    assert operation["requestBody"]["required"] is True
    responses = operation["responses"]
    assert sorted(responses) == ["200", "400", "401", "403", "404", "409", "410", "412",
                                 "413", "415", "422", "429", "500", "503"]  # fmt: skip
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Tenant"
    }
    conflict = responses["409"]["content"]["application/json"]["schema"]
    assert conflict["properties"]["error"]["properties"]["code"]["enum"] == [
        "CYCLE_DETECTED", "DEPTH_LIMIT_EXCEEDED", "IDEMPOTENCY_KEY_IN_USE"
    ]  # fmt: skip
    retry_after = responses["429"]["headers"]["Retry-After"]
    assert retry_after == {"$ref": "#/components/headers/Retry-After"}
    tenant = document["components"]["schemas"]["Tenant"]
    assert tenant["additionalProperties"] is False
    # Every field is always present, but for the child counts lists may ask for.
    assert set(tenant["required"]) == set(tenant["properties"]) - {"child_count"}
    assert tenant["properties"]["deleted_at"] == {
        "anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]
    }
    listing = document["paths"]["/api/v1/tenants"]["get"]["parameters"]
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
