"""What every use case needs, built once by the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from service.config import Settings
from service.crypto import KeyRing
from service.db.pool import Database
from service.repositories.registry import Repositories
from service.usecases.recording import ChangeRecorder


@dataclass(frozen=True, slots=True)
class Deps:
    settings: Settings
    db: Database
    repos: Repositories
    recorder: ChangeRecorder
    keyring: KeyRing
