"""JSON answers (orjson) and the error body of DESIGN.md section 2."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from service.errors import ServiceError


def json_response(
    data: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(data),
        status=status,
        headers=headers,
        content_type="application/json",
    )


def raw_json_response(
    text: str, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """JSON already rendered elsewhere (by PostgreSQL), sent as json_response sends."""
    return web.Response(
        body=text.encode(),
        status=status,
        headers=headers,
        content_type="application/json",
    )


def error_response(error: ServiceError, request_id: str) -> web.Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details:
        body["details"] = [d.as_dict() for d in error.details]
    body["request_id"] = request_id
    return json_response({"error": body, **error.extra}, status=error.status, headers=error.headers)
