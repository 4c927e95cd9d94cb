"""X-Consistency-Token (service/db/consistency.py): a write's answer carries the
primary's WAL position after its commit; a read that sends it back is served only by a
replica that has replayed that far, or by the primary. Outermost of the data
middlewares, so it runs after an Idempotency-Key request's held transaction commits."""

from __future__ import annotations

from aiohttp import web

from service.auth.authorization import SAFE_METHODS
from service.base.errors import FieldError, ServiceError
from service.db.consistency import (
    HEADER,
    InvalidToken,
    decode_token,
    encode_token,
    requiring,
    token_key,
)
from service.http.appkeys import DATABASE, ENDPOINTS, REPOSITORIES, SETTINGS
from service.http.middlewares.freshness import WRITE_POSITION, WRITE_REVISION
from service.http.routing import Handler, endpoint_for

# The newest revision when a write's answer was made: at or past the write's own, so a
# stream of context changes that reached it shows the write (docs/context-delivery.md).
REVISION_HEADER = "X-Revision"


@web.middleware
async def consistency(request: web.Request, handler: Handler) -> web.StreamResponse:
    sent = request.headers.get(HEADER)
    endpoint = endpoint_for(request, request.app[ENDPOINTS])
    # A POST that only reads (batch reads, flag evaluations) is a read here.
    reading = request.method in SAFE_METHODS or (endpoint is not None and endpoint.read_scope)
    if sent is None and reading:
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
    with requiring(required, writing=not reading):
        response = await handler(request)
    if not reading and response.status < 400:
        position = request.get(WRITE_POSITION)  # read with the read-your-writes marker
        if position is None:
            position = await request.app[DATABASE].write_position()
        if position is not None:
            response.headers[HEADER] = encode_token(position, key)
        revision = request.get(WRITE_REVISION)
        if revision is None:
            revision = await _newest_revision(request.app)
        if (
            revision is not None
            and not response.prepared
            and REVISION_HEADER not in response.headers
        ):
            response.headers[REVISION_HEADER] = str(revision)
    return response


async def _newest_revision(app: web.Application) -> int | None:
    """The newest revision now (after a commit: at or past its own), or None when the
    database does not answer (the write happened; only its revision is missing)."""
    revisions = app[REPOSITORIES].revisions
    try:
        return await app[DATABASE].run(revisions.current_revision)
    except Exception:
        return None
