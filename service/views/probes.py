"""Views of the liveness and readiness probes."""

from __future__ import annotations

from typing import Literal

from service.views.base import View


class Health(View):
    status: Literal["ok"]


class Readiness(View):
    status: Literal["ok", "unavailable"]
    database: Literal["ok", "unreachable", "migrations pending"]
    migration: int | None = None


class ReadReadiness(View):
    """GET /ready/reads: whether reads are answered, and by what; writes as /ready."""

    status: Literal["ok", "unavailable"]
    reads: Literal["primary", "replica", "unavailable"]
    writes: Literal["ok", "unavailable"]


class Index(View):
    """GET /: where to go from here."""

    service: str
    console: str
    openapi: str
    health: str
    documentation: str
