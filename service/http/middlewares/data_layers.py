"""The data middlewares (consistency, read-your-writes, idempotency) as one aiohttp
middleware after authentication. A plain read (GET, HEAD or OPTIONS without an
X-Consistency-Token) needs none of them, and every read would otherwise pay for three
more layers: it goes straight to its handler. Anything else runs through each of them,
first to last, exactly as if they were listed one by one."""

from __future__ import annotations

from functools import partial

from aiohttp import web
from aiohttp.typedefs import Middleware

from service.auth.authorization import SAFE_METHODS
from service.db.consistency import HEADER
from service.http.routing import Handler


def data_layers(*layers: Middleware) -> Middleware:
    """One middleware running `layers` (outermost first) for all but plain reads."""

    @web.middleware
    async def data(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in SAFE_METHODS and HEADER not in request.headers:
            return await handler(request)
        for layer in reversed(layers):
            handler = partial(layer, handler=handler)
        return await handler(request)

    return data
