"""The schema side of the OpenAPI document: every type it mentions rendered at once
(msgspec), query Structs as parameters, the components a schema reaches, error codes as
an enum, and request schemas whose optional properties say what their absence means."""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

from service.http.openapi.components import REF, error_code_schema


class Schemas:
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


def query_parameters(schema: dict[str, Any], components: dict[str, Any]) -> list[dict[str, Any]]:
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


def error_codes_as_enum(components: dict[str, Any]) -> None:
    """ErrorDetail.code is the enum of every documented code (service/base/errors.py)."""
    components["ErrorCode"] = error_code_schema()
    detail = components["ErrorDetail"]
    detail["properties"]["code"] = {"$ref": REF.format(name="ErrorCode")}


def reachable(schemas: list[dict[str, Any]], components: dict[str, Any]) -> set[str]:
    """The names of the components these schemas refer to, directly or not."""
    found: set[str] = set()
    stack: list[Any] = list(schemas)
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[-1]
                if name not in found:
                    found.add(name)
                    stack.append(components[name])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# What an absent optional property means, where "none" would say too little.
_ABSENT_MEANS = {"parent_id": "a root tenant", "expires_at": "no expiry"}


def absent_not_default(schema: dict[str, Any]) -> dict[str, Any]:
    """A request schema whose optional properties say what their absence means, rather
    than carry `default` (openapi-typescript makes a property with a default required, so
    `{name, slug}` would not type-check as a TenantCreate)."""
    properties = schema.get("properties")
    if not properties:
        return schema
    changed = {}
    for name, prop in properties.items():
        if "default" not in prop:
            changed[name] = prop
            continue
        rest = {k: v for k, v in prop.items() if k != "default"}
        default = prop["default"]
        if default is None:
            meaning = f"Absent (or null) means {_ABSENT_MEANS.get(name, 'none')}."
        else:
            meaning = f"Absent means {orjson.dumps(default).decode()}."
        text = rest.get("description", "")
        rest["description"] = f"{text} {meaning}".strip()
        changed[name] = rest
    return {**schema, "properties": changed}
