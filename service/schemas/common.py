"""Constrained types and checks shared by every request schema.

Checks raise ValueError("<field>: <message>") from a Struct's __post_init__; msgspec
reports those at the object, and the request decoder lifts the field name back out.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import orjson

CONFIG_KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9_.:-]{0,127}$"
MAX_VALUE_BYTES = 64 * 1024
MAX_JSON_DEPTH = 32
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1

ConfigKey = Annotated[str, msgspec.Meta(pattern=CONFIG_KEY_PATTERN, max_length=128)]
# What check_text refuses, said in the document (check_text keeps its clearer message).
NO_NUL = {"pattern": "^[^\\u0000]*$"}
# Any JSON value but null (a config value: DELETE removes an entry, null never stores one).
NonNull = Annotated[Any, msgspec.Meta(extra_json_schema={"not": {"type": "null"}})]


class Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every request body: unknown fields are an error."""


def check_text(value: str, field: str) -> None:
    """Text the database can store and a pattern's `$` cannot be fooled by."""
    if "\x00" in value:
        raise ValueError(f"{field}: must not contain NUL characters")


def check_anchored(value: str, field: str) -> None:
    # msgspec checks patterns with re.search, where `$` also matches before a final newline.
    if "\n" in value:
        raise ValueError(f"{field}: must not contain a newline")


def check_json(value: Any, field: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Any JSON the database can store: bounded nesting, 64-bit integers, no NUL."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise ValueError(f"{field}: nested more than {max_depth} levels deep")
        if isinstance(item, str):
            check_text(item, field)
        elif isinstance(item, bool) or item is None or isinstance(item, float):
            continue
        elif isinstance(item, int):
            if not _INT_MIN <= item <= _INT_MAX:
                raise ValueError(f"{field}: holds an integer outside the 64-bit range")
        elif isinstance(item, dict):
            for key, child in item.items():
                check_text(key, field)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def check_config_value(value: Any, field: str) -> None:
    check_json(value, field)
    if len(orjson.dumps(value)) > MAX_VALUE_BYTES:
        raise ValueError(f"{field}: larger than 64 KiB")


def check_config_map(config: dict[str, Any] | None, field: str = "config") -> None:
    if config is None:
        return
    for key, value in config.items():
        check_anchored(key, f"{field}.{key}")
        if value is not None:
            check_config_value(value, f"{field}.{key}")
