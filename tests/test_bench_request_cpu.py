"""bench/request_cpu.py measures the path it names: its requests reach the app built by
create_app through the real connection protocol, and a run whose answers are refused
gives no figures."""

from __future__ import annotations

import pytest

from bench.request_cpu import _request, measure
from service.app import create_app
from service.settings.options import Settings
from tests.support.live import admin_key


async def test_figures_are_of_answered_requests(settings: Settings) -> None:
    assert settings.database_url is not None
    key = await admin_key(settings.database_url, settings.api_key_hmac_secret.decode())
    headers = {"X-API-Key": key}
    median, lowest = await measure(
        create_app(settings), lambda _: _request("GET", "/api/v1/tenants", headers), 20, 2
    )
    assert 0 < lowest <= median


async def test_refused_requests_give_no_figures(settings: Settings) -> None:
    headers = {"X-API-Key": "sk_test_not-a-key"}
    with pytest.raises(RuntimeError, match="401"):
        await measure(
            create_app(settings), lambda _: _request("GET", "/api/v1/tenants", headers), 20, 1
        )
