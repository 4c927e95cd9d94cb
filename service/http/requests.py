"""Decoding request bodies, query strings and path ids into typed values (or a 4xx)."""

from __future__ import annotations

import functools
import json
import re
import uuid
from datetime import datetime
from typing import Any, TypeVar

import msgspec
import orjson
from aiohttp import web

from service.base.errors import FieldError, ServiceError
from service.schemas.config import entry_key

T = TypeVar("T")
_AT = re.compile(r"^(?P<message>.*?)(?: - at (?P<key>`key` in )?`(?P<path>[^`]*)`)?$", re.DOTALL)
_NAMED = re.compile(r"^Object (?:contains unknown|missing required) field `(?P<name>[^`]+)`$")
_CHECKED = re.compile(r"^(?P<name>[A-Za-z_][\w.:\[\]-]*): (?P<message>.+)$", re.DOTALL)


def _path_to_field(path: str | None) -> str:
    if not path or path == "$":
        return ""
    return path[2:] if path.startswith("$.") else path.lstrip("$")


def field_error(exc: msgspec.ValidationError, *, prefix: str = "") -> FieldError:
    """msgspec's first problem as {field, message}: 'name', 'tenants[0].slug', ..."""
    match = _AT.match(str(exc))
    assert match is not None
    message, field = match["message"], _path_to_field(match["path"])
    if match["key"]:
        message = f"invalid key: {message}"
    named = _NAMED.match(message)
    checked = _CHECKED.match(message)
    if checked and not named:
        field = f"{field}.{checked['name']}" if field else checked["name"]
        message = checked["message"]
    elif named:
        field = f"{field}.{named['name']}" if field else named["name"]
        message = message.replace("Object contains unknown field", "unknown field").replace(
            "Object missing required field", "missing required field"
        )
    if prefix:
        field = f"{prefix}{'' if field.startswith('[') else '.'}{field}" if field else prefix
    return FieldError(field or "body", message)


def validation_failed(error: FieldError) -> ServiceError:
    return ServiceError("VALIDATION_ERROR", f"{error.field}: {error.message}", details=[error])


class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def reject_duplicate_keys(data: bytes) -> None:
    """400 when an object names a key twice. Parsers disagree on which one wins (msgspec
    and orjson keep the last, others the first), so a proxy or a log could read another
    request than the service does: such a body is ambiguous, not merely redundant."""
    try:
        json.loads(data, object_pairs_hook=_unique_pairs)
    except _DuplicateKey as exc:
        name = str(exc.args[0])[:64]
        raise validation_failed(
            FieldError("body", f"the key {name!r} appears twice in one object")
        ) from None
    except (ValueError, RecursionError):  # already judged by msgspec; this never decides
        return


def _decode(data: bytes, type_: type[T]) -> T:
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError as exc:
        first = exc
        integer = re.search(r"Expected `int[^`]*`, got `float`", str(exc))
        retry = _with_integral_floats(data) if integer else None
        if retry is None:
            raise
    try:
        return msgspec.json.decode(retry, type=type_)
    except msgspec.ValidationError:
        raise first from None


def _integral(text: str) -> int | float:
    number = float(text)
    return int(number) if number.is_integer() else number


def _with_integral_floats(data: bytes) -> bytes | None:
    """The body with 1.0 written as 1. JSON Schema (so the OpenAPI document) counts 1.0
    as an integer; msgspec does not. Used only once a decode failed on exactly that."""
    try:
        return orjson.dumps(json.loads(data, parse_float=_integral))
    except (ValueError, RecursionError, orjson.JSONEncodeError):
        return None


def every_field_error(data: bytes, type_: Any) -> list[FieldError]:
    """Each bad field of an object body, not only the first msgspec meets: every field
    decoded on its own, then the missing and the unknown ones. Empty when the body is no
    object or each field is fine alone (a rule across fields failed)."""
    if not (isinstance(type_, type) and issubclass(type_, msgspec.Struct)):
        return []
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return []
    if not isinstance(body, dict):
        return []
    errors: list[FieldError] = []
    fields = msgspec.structs.fields(type_)
    for info in fields:
        if info.encode_name not in body:
            if info.required:
                errors.append(FieldError(info.encode_name, "missing required field"))
            continue
        try:
            _decode(orjson.dumps(body[info.encode_name]), info.type)
        except msgspec.ValidationError as exc:
            errors.append(field_error(exc, prefix=info.encode_name))
        except (msgspec.DecodeError, orjson.JSONEncodeError, RecursionError):
            return []
    if type_.__struct_config__.forbid_unknown_fields:
        known = {info.encode_name for info in fields}
        errors += [FieldError(str(k)[:64], "unknown field") for k in body if k not in known]
    return errors


def decode_json(data: bytes, type_: type[T]) -> T:
    try:
        value = _decode(data, type_)
    except msgspec.ValidationError as exc:
        errors = every_field_error(data, type_) or [field_error(exc)]
        message = "; ".join(f"{e.field}: {e.message}" for e in errors)
        raise ServiceError("VALIDATION_ERROR", message, details=errors) from None
    except msgspec.DecodeError as exc:
        raise validation_failed(FieldError("body", f"malformed JSON: {exc}")) from None
    except UnicodeDecodeError:
        raise validation_failed(FieldError("body", "the body is not valid UTF-8")) from None
    except RecursionError:
        raise validation_failed(FieldError("body", "JSON nested too deeply")) from None
    reject_duplicate_keys(data)
    return value


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or (
        content_type.startswith("application/") and content_type.endswith("+json")
    )


async def read_body(request: web.Request, type_: type[T]) -> T:
    """The JSON body as type_; 415 when it is not JSON, 400 when it is not valid."""
    data = await _read(request)
    if not data:
        raise validation_failed(FieldError("body", "a JSON object body is required"))
    return decode_json(data, type_)


async def read_optional_body(request: web.Request, type_: type[T]) -> T | None:
    """Like read_body, but an empty body is allowed and gives None."""
    data = await _read(request)
    return decode_json(data, type_) if data else None


async def _read(request: web.Request) -> bytes:
    if not request.body_exists:
        return b""
    data = await request.read()  # aiohttp answers 413 past client_max_size
    if data and not _is_json(request.content_type):
        raise ServiceError(
            "UNSUPPORTED_MEDIA_TYPE", "request bodies must be JSON (Content-Type: application/json)"
        )
    return data


def parse_query(request: web.Request, type_: type[T]) -> T:
    """Query parameters as type_; unknown or repeated parameters are errors."""
    if not request.query_string:
        return _defaults(type_)
    params: dict[str, Any] = {}
    for key, value in request.query.items():
        if key in params:
            raise validation_failed(FieldError(key, "parameter given more than once"))
        params[key] = value
    try:
        parsed = msgspec.convert(params, type_, strict=False)
    except msgspec.ValidationError as exc:
        raise validation_failed(field_error(exc)) from None
    # Parameter names as sent (`from`) to attribute names (`from_`).
    encoded: tuple[str, ...] = getattr(type_, "__struct_encode_fields__", ())
    names = dict(zip(encoded, getattr(type_, "__struct_fields__", ()), strict=True))
    for key, raw in params.items():
        converted = getattr(parsed, names.get(key, key), None)
        # Lax conversion reads the text "null" as None for optional non-text parameters;
        # a parameter that is given must have a value (leave it out to mean none).
        if converted is None:
            raise validation_failed(FieldError(key, "must have a value (leave it out instead)"))
        # It also reads a number as Unix seconds; a date-time parameter is ISO 8601 text.
        if isinstance(converted, datetime) and not _is_iso_datetime(raw):
            raise validation_failed(FieldError(key, "must be an ISO 8601 date-time"))
    return parsed


def _defaults(type_: type[T]) -> T:
    """type_ with no parameter given (the common case, kept off the general path)."""
    if _all_optional(type_):
        return type_()  # what converting {} gives, a tenth of its cost
    try:
        return msgspec.convert({}, type_, strict=False)
    except msgspec.ValidationError as exc:  # a required parameter is missing
        raise validation_failed(field_error(exc)) from None


def _all_optional(type_: type) -> bool:
    """Whether every field of the Struct `type_` has a default."""
    known = _ALL_OPTIONAL.get(type_)
    if known is None:
        try:
            known = not any(field.required for field in msgspec.structs.fields(type_))
        except TypeError:
            known = False
        _ALL_OPTIONAL[type_] = known
    return known


_ALL_OPTIONAL: dict[type, bool] = {}


def _is_iso_datetime(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def path_uuid(request: web.Request, name: str = "id") -> uuid.UUID:
    raw = request.match_info[name]
    try:
        return _uuid_of(raw)
    except ValueError as exc:
        raise validation_failed(FieldError(name, str(exc))) from None


def path_entry(request: web.Request) -> tuple[uuid.UUID, str]:
    """The tenant id and the config or permission key of an entry's path."""
    return path_uuid(request), entry_key(request.match_info["key"])


# The same few thousand tenants are read again and again: a parsed id is a dictionary
# lookup away (an exception, the refusal, is never cached).
@functools.lru_cache(maxsize=4096)
def _uuid_of(raw: str) -> uuid.UUID:
    try:
        value = uuid.UUID(raw)
    except ValueError:
        raise ValueError("must be a UUID") from None
    if len(raw) != 36:
        raise ValueError("must be a UUID in 8-4-4-4-12 form")
    return value
