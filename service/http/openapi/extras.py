"""What the OpenAPI document adds beyond the shapes: an example for every body, links
from each create to the operations on the created id, and the event payloads under the
top-level `webhooks` (OpenAPI 3.1).

Examples are built from the schemas themselves (tests/test_openapi.py validates every
one against its schema), with realistic values for the fields whose form a schema only
constrains (slugs, keys, durations, secrets).
"""

from __future__ import annotations

from typing import Any

from service.schemas.webhooks import TEST_EVENT, EventType

TENANT_ID = "0192f4a0-7c1e-7d3a-9b1f-3c2d4e5f6a7b"
_ID = "0192f4a0-7c1e-7d3a-9b1f-000000000001"
_WHEN = "2026-01-15T09:30:00.000Z"
# Sample values by property name, for fields whose schema has a form or a pattern.
_BY_NAME: dict[str, Any] = {
    "slug": "acme_eu",
    "name": "Acme EU",
    "key": "theme",
    "purpose": "marketing_emails",
    "url": "https://hooks.example.com/tenants",
    "secret": "my-shared-secret-2026",
    "standard_webhooks_secret": "whsec_bXktc2hhcmVkLXNlY3JldC0yMDI2",
    "old_key": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
    "new_key": "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=",
    "rate_limit_window": "1 minute",
    "confirm": "acme_eu",
    "region": "default",
    "ancestry_path": f"/{TENANT_ID}",
    "plaintext_key": "sk_live_4f9a2c7e1b8d3a6f5c0e9b2d7a4f1c8e",
    "key_prefix": "sk_live_4f9a",
    "request_id": "3f2a9c1e7b4d4f6a8e0c2b5d7f9a1c3e",
    "message": "what went wrong, in a sentence",
    "description": "Owned by the platform team",
    "actor_id": "key:0192f4a0-7c1e-7d3a-9b1f-000000000002",
    "action": "tenant.created",
    "resource_type": "tenant",
    "value": "dark",
    # Request examples must be accepted as they stand: an expiry in the future, a root
    # tenant rather than a parent that does not exist, a previewed change that sets.
    "expires_at": "2099-01-15T09:30:00.000Z",
    "parent_id": None,
    "change": "set",
}
_BY_FORMAT = {"uuid": _ID, "date-time": _WHEN, "uri": _BY_NAME["url"]}


class Examples:
    """Example values of the document's schemas (components.schemas resolved)."""

    def __init__(self, components: dict[str, Any]) -> None:
        self.components = components

    def of(self, schema: dict[str, Any], name: str = "", depth: int = 0) -> Any:
        if "$ref" in schema:
            target = schema["$ref"].rsplit("/", 1)[-1]
            return self.of(self.components[target], name, depth)
        if "example" in schema:
            return schema["example"]
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            preferred = _BY_NAME.get(name)
            return preferred if preferred in schema["enum"] else schema["enum"][0]
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            parts = [*schema["allOf"], {k: v for k, v in schema.items() if k != "allOf"}]
            for part in parts:
                value = self.of(part, name, depth) if part.keys() - {"description"} else {}
                _merge(merged, value if isinstance(value, dict) else {})
            return merged
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [o for o in schema[key] if o.get("type") != "null"]
                return self.of(options[0] if options else schema[key][0], name, depth)
        return self._typed(schema, name, depth)

    def _typed(self, schema: dict[str, Any], name: str, depth: int) -> Any:
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            properties = schema.get("properties", {})
            if not properties and schema.get("additionalProperties") is False:
                return {}
            if not properties and depth < 4:
                extra = schema.get("additionalProperties")
                key = {"counts": "tenants", "metadata": "owner"}.get(name, "theme")
                if isinstance(extra, dict) and extra:
                    return {key: self.of(extra, key, depth + 1)}
                return {key: "platform" if key == "owner" else "dark"}
            return {k: self.of(v, k, depth + 1) for k, v in properties.items()}
        if kind == "array":
            items = schema.get("items", {})
            if name == "scopes":
                return ["read", "write"]
            if name == "events":
                return ["tenant.created", "config.updated"]
            return [self.of(items, name, depth + 1)] if items and depth < 6 else []
        if kind == "boolean":
            return False
        if kind == "integer":
            return max(int(schema.get("minimum", 1)), 1) if name != "depth" else 1
        if kind == "number":
            return 1.5
        if kind == "string":
            if name in _BY_NAME:
                return _BY_NAME[name]
            return _BY_FORMAT.get(schema.get("format", ""), "text")
        if kind == "null":
            return None
        return _BY_NAME.get(name, "dark")  # any JSON value (a config value)


def _merge(into: dict[str, Any], value: dict[str, Any]) -> None:
    for key, item in value.items():
        if isinstance(item, dict) and isinstance(into.get(key), dict):
            _merge(into[key], item)
        else:
            into[key] = item


def links_of(create_path: str, operations: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Links from a create at `create_path` to every operation addressed by the new id
    alone ({path: {method: operation}} of the whole document)."""
    item = f"{create_path}/{{id}}"
    links = {}
    for path, methods in operations.items():
        if path != item and not path.startswith(item + "/"):
            continue
        if path.count("{") != 1:  # a second parameter ({key}) the create cannot give
            continue
        for operation in methods.values():
            op_id = operation["operationId"]
            links[op_id] = {
                "operationId": op_id,
                "parameters": {"id": "$response.body#/id"},
            }
    return links


def _data(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_UUID = {"type": "string", "format": "uuid"}
_OPT_UUID = {"anyOf": [_UUID, {"type": "null"}]}
_TEXT = {"type": "string"}
_ENTRY_KEY = {"tenant_id": _UUID, "key": _TEXT}
_CHANGE = _data({"id": _UUID, "slug": _TEXT, "parent_id": _OPT_UUID}, ["id", "slug", "parent_id"])
# The `data` of each event type, as service/usecases builds it.
EVENT_DATA: dict[str, dict[str, Any]] = {
    "tenant.created": {
        **_data(
            {
                "id": _UUID,
                "name": _TEXT,
                "slug": _TEXT,
                "parent_id": _OPT_UUID,
                "ancestry_path": _TEXT,
                "depth": {"type": "integer", "minimum": 0},
            },
            ["id", "name", "slug", "parent_id"],
        ),
        "description": "The new tenant (its fields as created).",
    },
    # tenant.updated: the Tenant and changed_fields (built from the Tenant's schema).
    "tenant.deleted": {**_CHANGE, "description": "The archived tenant."},
    "tenant.restored": {**_CHANGE, "description": "The restored tenant."},
    "tenant.moved": _data(
        {
            "id": _UUID,
            "slug": _TEXT,
            "old_parent_id": _OPT_UUID,
            "new_parent_id": _OPT_UUID,
            "old_ancestry_path": _TEXT,
            "new_ancestry_path": _TEXT,
            "descendants_moved": {"type": "integer", "minimum": 0},
        },
        ["id", "old_parent_id", "new_parent_id", "descendants_moved"],
    ),
    "config.updated": {
        **_data(
            {
                **_ENTRY_KEY,
                "value": {},
                "locked": {"type": "boolean"},
                "sensitive": {"type": "boolean"},
            },
            ["tenant_id", "key", "value", "locked", "sensitive"],
        ),
        "description": "A sensitive value is sent as `***`.",
    },
    "config.deleted": _data(_ENTRY_KEY, ["tenant_id", "key"]),
    "permission.created": _data(
        {
            **_ENTRY_KEY,
            "value": {"type": "boolean"},
            "mode": {"enum": ["INHERIT", "LOCKED", "LOCAL"]},
        },
        ["tenant_id", "key", "value", "mode"],
    ),
    "permission.deleted": _data(_ENTRY_KEY, ["tenant_id", "key"]),
    "config_schema.declared": {
        **_data(
            {**_ENTRY_KEY, "schema": {"type": "object"}, "enforce": {"type": "boolean"}},
            ["tenant_id", "key", "schema", "enforce"],
        ),
        "description": "A value schema declared or replaced (enforce false: audit-only).",
    },
    "config_schema.deleted": _data(_ENTRY_KEY, ["tenant_id", "key"]),
    "config_budget.declared": _data(_ENTRY_KEY, ["tenant_id", "key"]),
    "config_budget.deleted": _data(_ENTRY_KEY, ["tenant_id", "key"]),
    "tenant.protected": {
        **_data({"id": _UUID, "protected": {"type": "boolean"}}, ["id", "protected"]),
        "description": "The tenant's subtree now changes only through change requests.",
    },
}
_CHANGE_REQUEST = _data(
    {
        "id": _UUID,
        "title": _TEXT,
        "state": {
            "enum": [
                "draft",
                "pending_approval",
                "approved",
                "rejected",
                "cancelled",
                "applied",
                "failed",
            ],
        },
        "approvals": {"type": "integer", "minimum": 0},
        "error": {"type": "object", "properties": {"code": _TEXT, "message": _TEXT}},
    },
    ["id", "title", "state"],
)
for _event, _what in (
    ("created", "A change request was proposed (state pending_approval, or draft)."),
    ("submitted", "A draft was sent to review."),
    ("approved", "A reviewer approved; `state` is approved once enough have."),
    ("rejected", "A reviewer rejected the request."),
    ("cancelled", "The author or an admin cancelled the request."),
    (
        "drifted",
        "At apply time the affected set differed from the approved one: the "
        "request is back in pending_approval.",
    ),
    ("applied", "The whole list was applied in one transaction."),
    (
        "failed",
        "A change failed (nothing was applied) or the schedule was missed past "
        "the grace; `error` says why.",
    ),
):
    EVENT_DATA[f"change_request.{_event}"] = {**_CHANGE_REQUEST, "description": _what}
EVENT_DATA["tenant.unprotected"] = {
    **EVENT_DATA["tenant.protected"],
    "description": "The tenant no longer protects its subtree.",
}
EVENT_DATA["permission.updated"] = EVENT_DATA["permission.created"]
EVENT_DATA["webhook.disabled"] = {
    **_data(
        {
            "webhook_id": _UUID,
            "tenant_id": _OPT_UUID,
            "reason": _TEXT,
            "disabled_at": {"type": "string", "format": "date-time"},
        },
        ["webhook_id", "tenant_id", "reason", "disabled_at"],
    ),
    "description": "An endpoint that kept failing was turned off (sent to the others).",
}
# Not an event of the outbox: what POST /api/v1/webhooks/{id}/test sends, signed alike.
TEST_DATA = {
    **_data({"webhook_id": _UUID}, ["webhook_id"]),
    "description": "A test sent on request (POST /api/v1/webhooks/{id}/test); never retried.",
}
_DELIVERY_HEADERS = {
    "webhook-id": "The delivery id (the same on every attempt)",
    "webhook-timestamp": "Unix seconds of this attempt",
    "webhook-signature": "Standard Webhooks signatures: `v1,<base64 HMAC-SHA256>` ..., keyed "
    "with the key of `standard_webhooks_secret`",
    "X-Service-Event": "The event type",
    "X-Service-Delivery": "The delivery id",
    "X-Service-Signature": "`sha256=<hex HMAC-SHA256>` of the body keyed with the UTF-8 bytes "
    "of the webhook's secret",
}


def webhooks(examples: Examples) -> dict[str, Any]:
    """One entry per event type: the POST a subscribed webhook receives."""
    assert set(EVENT_DATA) | {"tenant.updated"} == set(EventType.__args__)  # type: ignore[attr-defined]
    tenant = examples.components["Tenant"]
    updated = {
        **tenant,
        "title": "TenantUpdated",
        "description": "The tenant after the change, and the names of the changed fields.",
        "properties": {**tenant["properties"], "changed_fields": {"type": "array", "items": _TEXT}},
        "required": [*tenant.get("required", ()), "changed_fields"],
    }
    entries = {}
    every = {**EVENT_DATA, "tenant.updated": updated, TEST_EVENT: TEST_DATA}
    for event, data in sorted(every.items()):
        envelope = {
            "type": "object",
            "properties": {
                "event_id": {**_UUID, "description": "The event's id, the same on every retry"},
                "event": {"const": event},
                "timestamp": {"type": "string", "format": "date-time"},
                "data": data,
            },
            "required": ["event_id", "event", "timestamp", "data"],
        }
        entries[event] = {
            "post": {
                "operationId": "event_" + event.replace(".", "_"),
                "summary": f"The {event} event, POSTed to each subscribed webhook URL",
                "description": f"{data.get('description', 'The event.')} Answer any 2xx "
                "within the delivery timeout; verify the signature headers first.",
                "parameters": [
                    {
                        "name": name,
                        "in": "header",
                        "required": True,
                        "description": text,
                        "schema": {"type": "string"},
                    }
                    for name, text in _DELIVERY_HEADERS.items()
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": envelope,
                            "example": examples.of(envelope),
                        }
                    },
                },
                "responses": {
                    "2XX": {"description": "Delivered (any 2xx); others are retried"},
                },
            }
        }
    return entries
