"""What every use case needs, built once by the app factory."""

from __future__ import annotations

from dataclasses import dataclass, field

from service.base.crypto import KeyRing
from service.db.pool import Database
from service.observability.metrics import Metrics
from service.repositories.registry import Repositories
from service.settings.options import Settings
from service.usecases.common.recording import ChangeRecorder
from service.usecases.common.schema_cache import SchemaCache


@dataclass(frozen=True, slots=True)
class Deps:
    settings: Settings
    db: Database
    repos: Repositories
    recorder: ChangeRecorder
    keyring: KeyRing
    # None where no app exists (one-shot commands, some tests): nothing is counted.
    metrics: Metrics | None = None
    # Compiled value schemas of config keys, shared by every write that checks them.
    schemas: SchemaCache = field(default_factory=SchemaCache)
