"""The view of GET /api/v1/me: who is calling (never the key's text, only its prefix)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from service.schemas.api_keys import Scope
from service.views.base import View


class SignedIn(View):
    kind: Literal["api_key", "jwt", "system"]
    id: str
    name: str | None
    prefix: str | None
    environment: Literal["live", "test"] | None
    scopes: list[Scope]
    tenant_id: UUID | None
