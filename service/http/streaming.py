"""JSON arrays written as they are read (StreamResponse), in bounded memory: each chunk
of documents is written and drained before the next is fetched."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from aiohttp import web

from service.http.conventions import finish_stream_headers
from service.http.middleware import answer_headers
from service.logs import get_logger
from service.repositories.tenants import JsonRows

log = get_logger("service.http.streaming")


async def stream_json_array(
    request: web.Request,
    chunks: AsyncIterator[JsonRows],
    *,
    headers: Mapping[str, str] | None = None,
) -> web.StreamResponse:
    """Send the documents of every chunk as one JSON array. Once the status line has
    left, a failure can no longer become an error answer: the connection is cut before
    the final chunk, so the client sees a truncated body rather than a short list."""
    response = web.StreamResponse(headers={**(headers or {}), **answer_headers(request)})
    response.content_type = "application/json"
    finish_stream_headers(request, response)
    await response.prepare(request)
    separator = b"["
    try:
        async for rows in chunks:
            await response.write(separator + ",".join(rows.documents).encode())
            separator = b","
    except (ConnectionResetError, OSError):
        return response  # the client went away; nothing more to send
    except Exception as exc:
        log.warning("streamed answer cut short", path=request.path, error=type(exc).__name__)
        if request.transport is not None:
            request.transport.abort()
        return response
    await response.write(b"[]" if separator == b"[" else b"]")
    await response.write_eof()
    return response
