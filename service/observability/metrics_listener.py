"""METRICS_PORT: a listener that serves only GET /metrics, on METRICS_HOST (loopback by
default), so a scraper reaches the figures without them being on the API port.

Under `serve --workers N` every worker binds it with SO_REUSEPORT, like the API port;
whichever worker answers reports the sum over all of them (PROMETHEUS_MULTIPROC_DIR, see
service/observability/metrics.py). When METRICS_TOKEN is set it is required here too.
"""

from __future__ import annotations

from aiohttp import web

from service.handlers.observability import scrape, token_presented
from service.http.conventions import SERVER
from service.http.deadlines import TimedSite
from service.settings.options import Settings

SERVED_APP = web.AppKey("served_app", web.Application)
TOKEN = web.AppKey("metrics_token", str)


async def _name_the_server(request: web.Request, response: web.StreamResponse) -> None:
    # Not aiohttp's default Server header: it announces the library and its version.
    response.headers["Server"] = SERVER


async def _metrics(request: web.Request) -> web.Response:
    if not token_presented(request, request.app.get(TOKEN), required=False):
        return web.Response(status=404, text="not found\n")
    return await scrape(request.app[SERVED_APP])


def metrics_app(served: web.Application, settings: Settings) -> web.Application:
    app = web.Application()
    app[SERVED_APP] = served
    if settings.metrics_token is not None:
        app[TOKEN] = settings.metrics_token
    app.router.add_get("/metrics", _metrics)
    app.on_response_prepare.append(_name_the_server)
    return app


async def start_metrics_listener(
    served: web.Application, settings: Settings, *, reuse_port: bool
) -> web.AppRunner | None:
    """Start the listener when METRICS_PORT is set; the caller cleans the runner up."""
    if not settings.metrics_port:
        return None
    runner = web.AppRunner(metrics_app(served, settings), handle_signals=False, access_log=None)
    await runner.setup()
    site = TimedSite(
        runner,
        settings.metrics_host,
        settings.metrics_port,
        header_timeout=settings.header_timeout_seconds,
        body_timeout=settings.body_timeout_seconds,
        reuse_port=reuse_port,
    )
    await site.start()
    return runner
