"""Compiled JSON Schemas (draft 2020-12) of config keys, built once per schema text.

A schema is compiled the first time a write meets it and kept under the digest of its
canonical text (the digest config_schemas stores), so every later write reuses the
validator; the least recently used ones leave past a bound.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

MAX_VALIDATORS = 1024


class InvalidSchema(Exception):
    """The schema is not a valid draft 2020-12 schema, or refers outside itself."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def schema_digest(schema: Any) -> str:
    return hashlib.sha256(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _pointer(parts: Any) -> str:
    return "#" + "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in parts)


def _references(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(node, dict):
        for name, child in node.items():
            if name in ("$ref", "$dynamicRef") and isinstance(child, str):
                yield (*path, name), child
            else:
                yield from _references(child, (*path, name))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _references(child, (*path, index))


def check_schema(schema: Any) -> None:
    """Raise InvalidSchema unless the schema is valid and self-contained (no fetching of
    other documents: a write must never wait on the network)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise InvalidSchema(_pointer(error.path), error.message) from None
    anchors = set(_anchors(schema))
    for path, ref in _references(schema):
        if not ref.startswith("#"):
            raise InvalidSchema(_pointer(path), "only references inside the schema (#...)")
        if not _resolves(schema, ref[1:], anchors):
            raise InvalidSchema(_pointer(path), f"{ref[:200]} refers to nothing in the schema")
    if any(name == "$id" for name in _keywords(schema, nested_only=True)):
        # A nested $id starts another resource, whose #... references resolve against it.
        raise InvalidSchema("#", "$id only at the top of the schema")
    validator = Draft202012Validator(schema)
    for probe in PROBES:
        try:
            validator.is_valid(probe)
        except RecursionError:
            raise InvalidSchema("#", "the schema refers to itself without end") from None
        except Unresolvable as error:
            raise InvalidSchema("#", f"a reference cannot be resolved: {error}"[:300]) from None


# Values a new schema is tried on once: a schema that cannot judge one of them (a $ref
# loop, say) is refused when declared rather than failing a write later.
PROBES: tuple[Any, ...] = (None, True, 0, 1.5, "", [], {}, [None], {"a": None})


def _keywords(node: Any, *, nested_only: bool, top: bool = True) -> Iterator[str]:
    if isinstance(node, dict):
        for name, child in node.items():
            if not (top and nested_only):
                yield name
            yield from _keywords(child, nested_only=nested_only, top=False)
    elif isinstance(node, list):
        for child in node:
            yield from _keywords(child, nested_only=nested_only, top=False)


def _anchors(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for name, child in node.items():
            if name in ("$anchor", "$dynamicAnchor") and isinstance(child, str):
                yield child
            else:
                yield from _anchors(child)
    elif isinstance(node, list):
        for child in node:
            yield from _anchors(child)


def _resolves(schema: Any, fragment: str, anchors: set[str]) -> bool:
    """Whether a #fragment (a JSON pointer or an anchor name) names a part of schema."""
    fragment = unquote(fragment)
    if not fragment:
        return True
    if not fragment.startswith("/"):
        return fragment in anchors
    node = schema
    for raw in fragment[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


class SchemaCache:
    def __init__(self, size: int = MAX_VALIDATORS) -> None:
        self._size = size
        self._validators: OrderedDict[str, Draft202012Validator] = OrderedDict()

    def validator(self, digest: str, schema: Any) -> Draft202012Validator:
        found = self._validators.get(digest)
        if found is not None:
            self._validators.move_to_end(digest)
            return found
        compiled = Draft202012Validator(schema)
        self._validators[digest] = compiled
        if len(self._validators) > self._size:
            self._validators.popitem(last=False)
        return compiled

    def __len__(self) -> int:
        return len(self._validators)
