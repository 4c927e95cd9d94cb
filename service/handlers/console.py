"""The admin console: public static files under a strict Content-Security-Policy.

The page needs no credentials; every piece of data it shows comes from the API with the
key or token the user pastes in, which the page keeps in sessionStorage only.
"""

from __future__ import annotations

from aiohttp import web

from service.base.errors import ServiceError
from service.base.etags import none_match
from service.console.assets import CONTENT_TYPES, INDEX, Asset
from service.http.appkeys import CONSOLE_ASSETS
from service.http.routing import FRESH_GET, Api

api = Api("console")

# No inline script or style, no eval, nothing from another origin; forms never submit by
# themselves (a key typed into a form can never end up in a URL); Trusted Types make any
# HTML-from-a-string sink (innerHTML and the like) throw, so data is only ever text.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
    # Revalidate every time (cheap with the ETag), so a new release is seen at once.
    "Cache-Control": "no-cache",
}


def _serve(request: web.Request, name: str) -> web.Response:
    asset: Asset | None = request.app[CONSOLE_ASSETS].get(name)
    if asset is None:
        raise ServiceError("NOT_FOUND", f"no route for {request.path}", headers=SECURITY_HEADERS)
    headers = {**SECURITY_HEADERS, "ETag": asset.etag}
    if none_match(request.headers.get("If-None-Match"), asset.etag):
        return web.Response(status=304, headers=headers)
    headers["Content-Type"] = asset.content_type
    return web.Response(body=asset.body, headers=headers)


@api.route(
    "GET", "/console", summary="The admin console (HTML page)", public=True,
    response=str, extra={"content_type": "text/html", **FRESH_GET},
)  # fmt: skip
async def console_page(request: web.Request) -> web.Response:
    return _serve(request, INDEX)


# `/console/` is this route with an empty name, so the document has no path ending in a
# slash (linters refuse one) and the redirect is still described.
@api.route(
    "GET", "/console/{name:[^/]*}",
    summary="A static file of the admin console (an empty name redirects to /console)",
    public=True, errors=("NOT_FOUND",), response=str,
    extra={
        "content_type": tuple(dict.fromkeys(CONTENT_TYPES.values())),
        **FRESH_GET,
        "responses": {308: None},
        "headers": {**FRESH_GET["headers"], 308: ("Location",)},
        "path": {"name": {"type": "string", "pattern": "^[^/]*$"}},
    },
)  # fmt: skip
async def console_file(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if not name:
        # One address for the page: /console/ and /console are the same thing to a person.
        return web.Response(status=308, headers={**SECURITY_HEADERS, "Location": "/console"})
    return _serve(request, name)
