"""A rendered document's answer whose head the pipeline writes as bytes.

A cached GET tenant or context spent about a fifth of its CPU in aiohttp's generic
answer path: `StreamResponse.prepare` works out keep-alive, chunking, Content-Length,
Date and Server, runs the response-prepare signal, then serializes every header
through a multidict. For a plain 200 of a rendered document over HTTP/1.1 keep-alive,
with no compression asked for, all of that is known in advance, so the pipeline
(service/http/middlewares/pipeline.py) composes the status line and headers in one
string (`head`) and `RenderedAnswer.prepare` hands it to the connection's writer,
which sends it with the body in one write, exactly as aiohttp would.

A body to gzip is gzipped once per document: the first answer that asks for it takes
aiohttp's own path, which gzips it, and the document keeps the result
(`Rendered.gzipped`); later answers send those bytes, by the fast head when they qualify
for it, by aiohttp's path otherwise. A cached 20 kB context read by a client asking for
gzip (the Python client does, as most HTTP clients do) took 430 to 474 µs of CPU in
process, against 46 to 95 µs without gzip; gzipped once, 56 to 66 µs.

Anything else (HEAD, 304, another status, Connection: close, HTTP/1.0, headers a
handler added, a response-prepare signal) takes aiohttp's own path: the object is an
ordinary `web.Response` with its headers as before.

The head is aiohttp's: the same fields and values; tests/test_rendered_answers.py sends
the same requests both ways and compares the answers, so an aiohttp upgrade that changes
what the writer expects fails there. `FAST_HEADS` is False when the writer lacks the
attributes this relies on, and every answer then takes aiohttp's path.
"""

from __future__ import annotations

from aiohttp import HttpVersion11, hdrs, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.compression_utils import MAX_SYNC_CHUNK_SIZE
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http_writer import StreamWriter
from multidict import CIMultiDict

from service.base.etags import Rendered
from service.http.conventions import COMPRESS_MIN_BYTES, SERVER, gzips

FAST_HEADS = (
    all(hasattr(StreamWriter, name) for name in ("_send_headers_with_payload", "write_eof"))
    and "_headers_buf" in StreamWriter.__init__.__code__.co_names
)

# What every fast head of a credentialed route carries after the rate-limit fields.
_TAIL = f"Server: {SERVER}\r\nCache-Control: no-store\r\n"
_VARY = "Vary: Accept-Encoding\r\n"
_GZIP = "Content-Encoding: gzip\r\n"


class RenderedAnswer(web.Response):
    """A 200 of a rendered document (JSON bytes and their ETag)."""

    def __init__(self, rendered: Rendered) -> None:
        # What web.Response.__init__ leaves for body= and headers= without text or
        # content_type, in a third of its time (its checks of text, content_type and
        # the body's type have nothing to check here).
        web.StreamResponse.__init__(
            self,
            _real_headers=CIMultiDict({"Content-Type": "application/json", "ETag": rendered.etag}),
        )
        self._body = rendered.body
        self._zlib_executor_size = MAX_SYNC_CHUNK_SIZE
        self._zlib_executor = None
        self.rendered = rendered
        self.head: bytes | None = None
        # The bytes the fast head sends: the body, or the body gzipped.
        self._sent = rendered.body

    def sendable_as_bytes(self, request: web.Request) -> bool:
        """Whether this answer to `request` may leave by the fast head: nothing but the
        two headers it was made with, a plain HTTP/1.1 keep-alive GET, a body that is
        not to be gzipped or was gzipped before, no signal that would change the
        headers."""
        if not (
            FAST_HEADS
            and request.method == "GET"
            and request.version == HttpVersion11
            and request.keep_alive
            and len(self.headers) == 2
            and not self.prepared
            and not request.app.on_response_prepare
        ):
            return False
        rendered = self.rendered
        if gzips(request.headers.get("Accept-Encoding"), len(rendered.body)):
            if rendered.gzipped is None:
                return False  # aiohttp's path gzips it, once (_do_start_compression)
            self._sent = self._compressed_body = rendered.gzipped
        return True

    def set_head(self, request_id: str, rate_limit_fields: str) -> None:
        """The status line and every header, as aiohttp would send them. The values
        are the service's own: an ETag of hex digits, a request id the pipeline
        checked against its pattern (letters, digits and `._:-`), numbers."""
        rendered = self.rendered
        sent = self._sent
        self.head = (
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: application/json\r\n"
            f"ETag: {rendered.etag}\r\n"
            f"{rate_limit_fields}"
            f"X-Request-ID: {request_id}\r\n"
            f"{_TAIL}"
            f"{_VARY if len(rendered.body) > COMPRESS_MIN_BYTES else ''}"
            f"Content-Length: {len(sent)}\r\n"
            f"{'' if sent is rendered.body else _GZIP}"
            f"Date: {rfc822_formatted_time()}\r\n\r\n"
        ).encode()

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        head = self.head
        if head is None or self._payload_writer is not None or self._eof_sent:
            return await super().prepare(request)
        writer = request._payload_writer
        self._req = request
        self._payload_writer = writer
        self._must_be_empty_body = False
        self._keep_alive = True
        # The writer sends buffered headers with the body in write_eof, as it does
        # for the headers StreamResponse._write_headers gives it.
        writer._headers_buf = head  # type: ignore[attr-defined]
        writer._headers_written = False  # type: ignore[attr-defined]
        return writer

    async def _do_start_compression(self, coding: web.ContentCoding) -> None:
        """aiohttp's gzip of the whole body, done once per document: the bytes it made
        are kept with the document, and sent again as they are."""
        rendered = self.rendered
        if coding is not web.ContentCoding.gzip or self._body is not rendered.body:
            # Another coding, or a body set since: not the document's bytes to keep.
            await super()._do_start_compression(coding)
        elif rendered.gzipped is not None:
            # What aiohttp's Response._do_start_compression leaves, without the gzip.
            self._compressed_body = rendered.gzipped
            self._headers[hdrs.CONTENT_ENCODING] = coding.value
            self._headers[hdrs.CONTENT_LENGTH] = str(len(rendered.gzipped))
        else:
            await super()._do_start_compression(coding)
            if self._compressed_body is not None:
                rendered.keep_gzipped(self._compressed_body)
