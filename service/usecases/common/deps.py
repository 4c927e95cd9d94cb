"""What every use case needs, built once by the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from service.base.crypto import KeyRing
from service.db.pool import Database
from service.observability.metrics import Metrics
from service.repositories.registry import Repositories
from service.settings.options import Settings
from service.usecases.common.recording import ChangeRecorder


@dataclass(frozen=True, slots=True)
class Deps:
    settings: Settings
    db: Database
    repos: Repositories
    recorder: ChangeRecorder
    keyring: KeyRing
    # None where no app exists (one-shot commands, some tests): nothing is counted.
    metrics: Metrics | None = None
