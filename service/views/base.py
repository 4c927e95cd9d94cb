"""What every view shares: the base Struct, timestamps on the wire, and the one render
step (body bytes, and the ETag of the canonical form)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Self

import msgspec

from service.base.etags import Rendered, etag_of_bytes
from service.base.timefmt import iso

# Every timestamp is UTC with milliseconds and a Z (service/base/timefmt.py): an RFC 3339
# date-time, kept as the text the API sends.
Instant = Annotated[str, msgspec.Meta(extra_json_schema={"format": "date-time"})]

# What a sensitive config value shows as, unless revealed; secrets in audit entries too.
SENSITIVE_MASK = "***"

_encoder = msgspec.json.Encoder()
# Sorted keys at every level: the same document always has the same bytes, so its ETag.
_canonical = msgspec.json.Encoder(order="sorted")


class View(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Base of every response view: the document lists every field there is, so the
    OpenAPI document says `additionalProperties: false` and the Schemathesis run fails
    the moment a view sends a field it does not describe."""


def same_fields(view: type[View], row: object, **given: Any) -> dict[str, Any]:
    """The fields of `view` from a row holding them under the same names, timestamps as
    Instants, but for those `given` (values as the caller may see them, ...)."""
    return {
        name: given[name] if name in given else _sent(getattr(row, name))
        for name in view.__struct_fields__
    }


class RowView(View):
    """A view whose fields its row holds under the same names (timestamps as Instants)."""

    @classmethod
    def of(cls, row: object) -> Self:
        return cls(**same_fields(cls, row))


def _sent(value: Any) -> Any:
    return iso(value) if isinstance(value, datetime) else value


def opt_str(value: object | None) -> str | None:
    """An optional id (or anything) as text, None staying None."""
    return None if value is None else str(value)


def instant(value: datetime) -> str:
    return iso(value)


def instant_or_none(value: datetime | None) -> str | None:
    return None if value is None else iso(value)


def encode(value: Any) -> bytes:
    """A response body: views, lists of views, or plain JSON values."""
    return _encoder.encode(value)


def render(view: Any) -> Rendered:
    """The body and its strong ETag (a digest of the canonical form)."""
    return Rendered(_encoder.encode(view), etag_of_bytes(_canonical.encode(view)))


def etag(view: Any) -> str:
    return etag_of_bytes(_canonical.encode(view))


def document(view: Any) -> Any:
    """The view as plain JSON values (dicts, lists, text), for events and audit entries."""
    return msgspec.to_builtins(view)


# Always true; a boolean with `const` (not `enum: [true]`, which client generators drop).
AlwaysTrue = Annotated[bool, msgspec.Meta(extra_json_schema={"const": True})]
