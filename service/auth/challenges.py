"""WWW-Authenticate of refused requests (RFC 9110 11.6.1, RFC 6750 3).

Every 401 and 403 names the scheme to use: `Bearer` for a JWT (RFC 6750, with
`error="invalid_token"` on a 401 and `error="insufficient_scope"` on a 403) and, for an
API key in X-API-Key, this service's own `ApiKey` scheme with the same parameters
(docs/api.md). A request that sent neither is offered both.
"""

from __future__ import annotations

from collections.abc import Mapping

REALM = "tenant-service"
BOTH = f'Bearer realm="{REALM}", ApiKey realm="{REALM}"'


def challenge(status: int, headers: Mapping[str, str]) -> str | None:
    """The WWW-Authenticate value of a 401 or 403 answer to a request with these
    headers; None for other statuses."""
    if status not in (401, 403):
        return None
    bearer = headers.get("Authorization", "").strip().lower().startswith("bearer")
    key = "X-API-Key" in headers
    if bearer == key:  # neither (or both, which is a 400 before this)
        return BOTH if status == 401 else f'ApiKey realm="{REALM}", error="insufficient_scope"'
    scheme = "Bearer" if bearer else "ApiKey"
    error = "invalid_token" if status == 401 else "insufficient_scope"
    return f'{scheme} realm="{REALM}", error="{error}"'
