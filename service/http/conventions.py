"""Headers every answer gets on its way out (request_context applies them): a Server
header without versions, `Cache-Control: no-store` on answers to credentialed routes,
and gzip for bodies over 1 KB when the client asks for it (with `Vary`)."""

from __future__ import annotations

from aiohttp import hdrs, web

SERVER = "tenant-service"
# Smaller bodies gain too little to be worth the CPU (and may grow).
COMPRESS_MIN_BYTES = 1024


def accepts_gzip(header: str) -> bool:
    """Whether an Accept-Encoding value (RFC 9110 section 12.5.3) accepts gzip: listed,
    or covered by `*`, with a non-zero q."""
    if not header:
        return False
    weights: dict[str, float] = {}
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        name = name.strip().lower()
        if not name:
            continue
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[name] = weight
    for name in ("gzip", "x-gzip", "*"):
        if name in weights:
            return weights[name] > 0
    return False


def _add_vary(response: web.StreamResponse, field: str) -> None:
    if hdrs.VARY not in response.headers:
        response.headers[hdrs.VARY] = field
        return
    present = [v.strip().lower() for v in response.headers.get(hdrs.VARY, "").split(",")]
    if "*" in present or field.lower() in present:
        return
    existing = response.headers.get(hdrs.VARY)
    response.headers[hdrs.VARY] = f"{existing}, {field}" if existing else field


def compress_if_asked(request: web.Request, response: web.StreamResponse) -> None:
    """gzip a complete body over COMPRESS_MIN_BYTES when Accept-Encoding allows it.
    HEAD answers the same headers as GET (aiohttp sends the compressed length)."""
    if not isinstance(response, web.Response) or hdrs.CONTENT_ENCODING in response.headers:
        return
    body = response.body
    if not isinstance(body, bytes | bytearray) or len(body) <= COMPRESS_MIN_BYTES:
        return
    _add_vary(response, hdrs.ACCEPT_ENCODING)
    if gzips(request.headers.get(hdrs.ACCEPT_ENCODING), len(body)):
        response.enable_compression(web.ContentCoding.gzip)


def gzips(accept_encoding: str | None, size: int) -> bool:
    """Whether a complete body of `size` bytes is sent gzipped to a client whose
    Accept-Encoding is `accept_encoding`: over COMPRESS_MIN_BYTES, and accepted."""
    return size > COMPRESS_MIN_BYTES and accepts_gzip(accept_encoding or "")


def finish_headers(request: web.Request, response: web.StreamResponse, *, private: bool) -> None:
    """`private`: the route needs credentials, so its answers are never stored by caches
    (a handler's own Cache-Control, e.g. the console's, is kept)."""
    headers = response.headers
    headers[hdrs.SERVER] = SERVER
    if private and hdrs.CACHE_CONTROL not in headers:
        headers[hdrs.CACHE_CONTROL] = "no-store"
    compress_if_asked(request, response)


def finish_stream_headers(request: web.Request, response: web.StreamResponse) -> bool:
    """finish_headers for a streamed answer of a credentialed route, applied before its
    first byte (headers cannot change afterwards). Whether the client takes gzip: the
    stream then compresses chunk by chunk itself (service/http/streaming.py)."""
    response.headers[hdrs.SERVER] = SERVER
    response.headers.setdefault(hdrs.CACHE_CONTROL, "no-store")
    _add_vary(response, hdrs.ACCEPT_ENCODING)
    return accepts_gzip(request.headers.get(hdrs.ACCEPT_ENCODING, ""))
