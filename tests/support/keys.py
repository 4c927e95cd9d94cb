"""Creating credentials for tests through the service's own code paths."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any
from uuid import UUID

import jwt
from aiohttp import web

from service.auth.principal import SYSTEM_ACTOR
from service.http.appkeys import DATABASE, DEPS
from service.usecases.keys.issuing import IssuedKey, issue_api_key


async def make_key(
    app: web.Application,
    scopes: Sequence[str] = ("read", "write", "admin"),
    *,
    tenant_id: UUID | str | None = None,
    name: str = "test key",
    **options: Any,
) -> IssuedKey:
    deps = app[DEPS]
    async with app[DATABASE].connection() as conn, conn.transaction():
        return await issue_api_key(
            conn,
            keys=deps.repos.api_keys,
            recorder=deps.recorder,
            hmac_secret=deps.settings.api_key_hmac_secret,
            actor=SYSTEM_ACTOR,
            name=name,
            scopes=list(scopes),
            tenant_id=UUID(str(tenant_id)) if tenant_id else None,
            **options,
        )


async def key_headers(app: web.Application, *args: Any, **kwargs: Any) -> dict[str, str]:
    issued = await make_key(app, *args, **kwargs)
    return {"X-API-Key": issued.plaintext}


def make_token(secret: str, *, algorithm: str = "HS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"sub": "user-1", "iat": now, "exp": now + 600, **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, secret, algorithm=algorithm)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
