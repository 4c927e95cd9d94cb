"""The service on a loop of its own (tests/support/live_app.py) for the Python client's
tests: the client's threads and event loops talk to it over loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.keys import make_key
from tests.support.live_app import LiveApp


def live_service(db_url: str, folder: Path, **env: Any) -> Iterator[LiveApp]:
    live = LiveApp(Settings.from_env(base_env(db_url, folder, **env)))
    try:
        yield live
    finally:
        live.close()


def issue_key(live: LiveApp, *scopes: str, **options: Any) -> str:
    """The plaintext of a new key made through the service's own code."""
    assert live.runner is not None
    app = live.runner.app
    issued = live.run(make_key(app, scopes or ("read", "write", "admin"), **options))
    return issued.plaintext


@pytest.fixture(scope="module")
def live(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    yield from live_service(db_url, tmp_path_factory.mktemp("client_service"))
