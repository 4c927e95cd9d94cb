"""X-Consistency-Token (service/db/consistency.py): a write's answer carries the
primary's WAL position after its commit; a read that sends it back is served only by a
replica that has replayed that far, or by the primary. Outermost of the data
middlewares, so it runs after an Idempotency-Key request's held transaction commits."""

from __future__ import annotations

from aiohttp import web

from service.base.errors import FieldError, ServiceError
from service.db.consistency import (
    HEADER,
    InvalidToken,
    decode_token,
    encode_token,
    requiring,
    token_key,
)
from service.http.appkeys import DATABASE, SETTINGS
from service.http.freshness import WRITE_POSITION
from service.http.routing import Handler

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@web.middleware
async def consistency(request: web.Request, handler: Handler) -> web.StreamResponse:
    sent = request.headers.get(HEADER)
    if sent is None and request.method in SAFE_METHODS:
        return await handler(request)  # what `requiring` resets to after every request
    required = None
    key = token_key(request.app[SETTINGS].api_key_hmac_secret)
    if sent is not None:
        try:
            required = decode_token(sent, key)
        except InvalidToken as exc:
            message = f"{HEADER} is not a token this service issued"
            raise ServiceError(
                "VALIDATION_ERROR", message, details=[FieldError(HEADER, "invalid token")]
            ) from exc
    with requiring(required, writing=request.method not in SAFE_METHODS):
        response = await handler(request)
    if request.method not in SAFE_METHODS and response.status < 400:
        position = request.get(WRITE_POSITION)  # read with the read-your-writes marker
        if position is None:
            position = await request.app[DATABASE].write_position()
        if position is not None:
            response.headers[HEADER] = encode_token(position, key)
    return response
