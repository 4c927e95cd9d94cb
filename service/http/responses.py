"""JSON answers (views rendered by service/views/base.py), answers with an ETag and
If-None-Match, and the error body of docs/api.md, Errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol
from uuid import UUID

from aiohttp import web

from service.base.errors import ServiceError
from service.base.etags import Rendered, none_match
from service.http.rendered_answers import RenderedAnswer
from service.repositories.tenants import RawJsonPage
from service.views.base import encode


def json_response(
    data: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """A view, a list of views, or plain JSON values as the body."""
    return web.Response(
        body=encode(data),
        status=status,
        headers=headers,
        content_type="application/json",
    )


def rendered_response(
    request: web.Request,
    rendered: Rendered,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """A rendered document with its ETag. A read answers 304 without a body when the
    client's copy is current (If-None-Match); a write's answer is always the document."""
    etag = rendered.etag
    client_copy = request.headers.get("If-None-Match")
    if (
        client_copy is not None
        and status == 200
        and request.method in ("GET", "HEAD")
        and none_match(client_copy, etag)
    ):
        return web.Response(status=304, headers={**(headers or {}), "ETag": etag})
    if status == 200 and not headers:
        return RenderedAnswer(rendered)
    # Content-Type among the headers: one multidict built at once.
    all_headers = {"Content-Type": "application/json", "ETag": etag}
    if headers:
        all_headers.update(headers)
    return web.Response(body=rendered.body, status=status, headers=all_headers)


def put_response(view: Any, created: bool, location: str) -> web.Response:
    """A PUT's answer: 201 with the Location of what it created, 200 when it replaced."""
    if not created:
        return json_response(view, status=200, headers={})
    return json_response(view, status=201, headers={"Location": location})


def raw_json_response(
    text: str | bytes, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """JSON already rendered elsewhere (by PostgreSQL), sent as json_response sends."""
    return web.Response(
        body=text.encode() if isinstance(text, str) else text,
        status=status,
        headers=headers,
        content_type="application/json",
    )


def json_page_response(request: web.Request, page: RawJsonPage) -> web.Response:
    """A page rendered by PostgreSQL, its next page's cursor in X-Next-Cursor and Link."""
    headers = next_page(request, page.next_cursor, cursor_header=True)
    return raw_json_response(page.body.text, headers=headers)


def next_page(
    request: web.Request, cursor: UUID | None, *, cursor_header: bool = False
) -> dict[str, str]:
    """The headers of a page that has a next one: `Link: <...>; rel="next"` (RFC 8288),
    the request's own path and query with `cursor` set, and X-Next-Cursor where the list
    names its cursor in a header rather than in its body."""
    if cursor is None:
        return {}
    url = request.rel_url.update_query(cursor=str(cursor))
    headers = {"Link": f'<{url}>; rel="next"'}
    if cursor_header:
        headers["X-Next-Cursor"] = str(cursor)
    return headers


class KeysetPage(Protocol):
    """A page a use case answers: its cursor, and whether a next page follows."""

    @property
    def next_cursor(self) -> UUID | None: ...
    @property
    def has_more(self) -> bool: ...


def page_response(
    request: web.Request,
    view: Callable[..., Any],
    data: list[Any],
    page: KeysetPage,
    *,
    cursor_header: bool = False,
) -> web.Response:
    """A keyset page: its view (`data`, `next_cursor`, `has_more`) as the body, and the
    headers of the next page (next_page)."""
    body = view(data=data, next_cursor=page.next_cursor, has_more=page.has_more)
    return json_response(
        body, headers=next_page(request, page.next_cursor, cursor_header=cursor_header)
    )


def error_response(error: ServiceError, request_id: str) -> web.Response:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.details:
        body["details"] = [d.as_dict() for d in error.details]
    body["request_id"] = request_id
    return json_response({"error": body, **error.extra}, status=error.status, headers=error.headers)
