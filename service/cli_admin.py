"""Administrative commands of tenant-service beside `serve`: `api-keys list|revoke|rotate`
(through the same use cases as the HTTP API, as the system actor, audited) and
`migrate --status`; plus the one-line report of a database the command cannot reach."""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar
from uuid import UUID

import asyncpg

from service.auth.principal import SCOPES, SYSTEM_ACTOR, Principal
from service.base.crypto import Encryptor, KeyRing
from service.base.errors import ServiceError
from service.base.timefmt import iso
from service.caches.key_cache import KeyCache
from service.db.migrations import apply_migrations, migration_status
from service.db.pool import Database, connect
from service.db.queries import Queries
from service.repositories.registry import Repositories
from service.schemas.api_keys import ListApiKeysQuery
from service.settings.options import Settings
from service.usecases.common.deps import Deps
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.commands import ApiKeyCommands, CreatedKey
from service.usecases.keys.queries import ApiKeyQueries
from service.views.base import encode
from service.views.keys import ApiKey, ApiKeyWithPlaintext

T = TypeVar("T")
# The command line acts as a global admin, as the system actor in the audit log.
SYSTEM = Principal(actor_id=SYSTEM_ACTOR.actor_id, actor_type="system", scopes=frozenset(SCOPES))
MAX_GRACE_SECONDS = 604_800


# What connecting to PostgreSQL raises when the server is down, unknown, refuses the login
# or has no such database (an OSError of another kind, a taken port say, is not one).
_CANNOT_CONNECT = (
    asyncpg.PostgresConnectionError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    asyncpg.InvalidAuthorizationSpecificationError,
    asyncpg.InvalidCatalogNameError,
    ConnectionError,
    socket.gaierror,
    TimeoutError,
)


def unreachable_database(exc: BaseException) -> str | None:
    """One line for a database the command cannot reach or log in to; None otherwise.
    asyncpg's texts name the address or the database, never a password."""
    # asyncpg reports refusals on several addresses (localhost: ::1 and 127.0.0.1) as
    # one OSError naming each "Connect call failed".
    several = isinstance(exc, OSError) and "Connect call failed" in str(exc)
    if not (isinstance(exc, _CANNOT_CONNECT) or several):
        return None
    reason = " ".join((str(exc) or type(exc).__name__).split())
    return f"cannot reach the database (check DATABASE_URL and that PostgreSQL runs): {reason}"


@dataclass(frozen=True, slots=True)
class KeyUseCases:
    commands: ApiKeyCommands
    queries: ApiKeyQueries
    deps: Deps

    async def key_id(self, text: str) -> UUID:
        """A key named by its id or by the prefix `api-keys list` shows (sk_test_AbCd)."""
        try:
            return UUID(text)
        except ValueError:
            pass
        found: list[UUID] = []
        cursor: UUID | None = None
        while True:
            query = ListApiKeysQuery(include_revoked=True, cursor=cursor, limit=100)
            page = await self.queries.list_page(SYSTEM, query)
            found += [k.key.id for k in page.items if k.key.prefix == text]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if not found:
            raise ServiceError("API_KEY_NOT_FOUND", f"no API key has the id or prefix {text!r}")
        if len(found) > 1:
            raise ServiceError(
                "VALIDATION_ERROR",
                f"{len(found)} keys have the prefix {text!r}: name one by its id "
                f"({', '.join(str(k) for k in found)})",
            )
        return found[0]

    async def tenant_id(self, text: str | None) -> UUID | None:
        """A tenant named by its id or its slug."""
        if text is None:
            return None
        try:
            return UUID(text)
        except ValueError:
            pass
        tenants = self.deps.repos.tenants
        tenant = await self.deps.db.read(lambda c: tenants.get_tenant_by_slug(c, text))
        if tenant is None:
            raise ServiceError("TENANT_NOT_FOUND", f"no tenant has the id or slug {text!r}")
        return tenant.id

    async def slugs(self, ids: set[UUID]) -> dict[UUID, str]:
        tenants = self.deps.repos.tenants
        found = await self.deps.db.read(lambda c: tenants.get_tenants_by_ids(c, list(ids)))
        return {tenant_id: tenant.slug for tenant_id, tenant in found.items()}


@asynccontextmanager
async def key_use_cases(settings: Settings, dsn: str) -> AsyncIterator[KeyUseCases]:
    """The API key use cases over a small pool, after migrations (as `serve` would)."""
    queries = Queries.load()
    conn = await connect(dsn)
    try:
        await apply_migrations(conn, queries)
    finally:
        await conn.close()
    repos = Repositories.build(queries)
    database = Database(settings)
    await database.open(dsn)
    try:
        keyring = KeyRing(Encryptor(settings.encryption_key, settings.encryption_keys_previous))
        recorder = ChangeRecorder(repos.outbox, webhook_max_attempts=settings.webhook_max_attempts)
        deps = Deps(settings, database, repos, recorder, keyring)
        yield KeyUseCases(ApiKeyCommands(deps, KeyCache()), ApiKeyQueries(deps), deps)
    finally:
        await database.close()


def run_keys(settings: Settings, dsn: str, work: Callable[[KeyUseCases], Awaitable[T]]) -> T | None:
    """work() with the use cases; a refusal (unknown key, revoked...) is one line and None."""

    async def go() -> T:
        async with key_use_cases(settings, dsn) as cases:
            return await work(cases)

    try:
        return asyncio.run(go())
    except ServiceError as err:
        sys.stderr.write(f"tenant-service: {err.message} ({err.code})\n")
        return None


def list_keys(settings: Settings, dsn: str, args: argparse.Namespace) -> int:
    async def work(cases: KeyUseCases) -> tuple[list[ApiKey], dict[UUID, str]]:
        found: list[ApiKey] = []
        cursor: UUID | None = None
        tenant_id = await cases.tenant_id(args.tenant_id)
        while True:
            query = ListApiKeysQuery(
                tenant_id=tenant_id,
                include_revoked=args.include_revoked,
                cursor=cursor,
                limit=100,
            )
            page = await cases.queries.list_page(SYSTEM, query)
            found += [ApiKey.of(k) for k in page.items]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        # Newest first, as the help says (pages come in id order, oldest first).
        found.sort(key=lambda k: (k.created_at, str(k.id)), reverse=True)
        return found, await cases.slugs({k.tenant_id for k in found if k.tenant_id})

    listed = run_keys(settings, dsn, work)
    if listed is None:
        return 1
    keys, slugs = listed
    if args.json:
        sys.stdout.write(encode(keys).decode() + "\n")
        return 0
    for key in keys:
        last_used = key.last_used_at or "never"
        tenant = "-" if key.tenant_id is None else slugs.get(key.tenant_id, str(key.tenant_id))
        sys.stdout.write(
            f"{key.id}  {key.prefix}  {key.status:<8}  {','.join(key.effective_scopes):<16}  "
            f"tenant={tenant}  last_used={last_used}  {key.name}\n"
        )
    return 0


def revoke_key(settings: Settings, dsn: str, args: argparse.Namespace) -> int:
    async def work(cases: KeyUseCases) -> str:
        key_id = await cases.key_id(args.key)
        before = (await cases.queries.get(SYSTEM, key_id)).key.revoked_at
        if before is not None and before <= datetime.now(UTC):
            return f"API key {key_id} was already revoked at {iso(before)}; nothing changed.\n"
        await cases.commands.revoke(SYSTEM, SYSTEM_ACTOR, key_id)
        return f"Revoked API key {key_id}.\n"

    said = run_keys(settings, dsn, work)
    if said is None:
        return 1
    sys.stdout.write(said)
    return 0


def rotate_key(settings: Settings, dsn: str, args: argparse.Namespace) -> int:
    async def work(cases: KeyUseCases) -> tuple[UUID, CreatedKey]:
        key_id = await cases.key_id(args.key)
        return key_id, await cases.commands.rotate(SYSTEM, SYSTEM_ACTOR, key_id, args.grace_period)

    rotated = run_keys(settings, dsn, work)
    if rotated is None:
        return 1
    old_id, created = rotated
    key = created.stored.key
    if args.json:
        view = ApiKeyWithPlaintext.issued(
            key, created.plaintext, role_scopes=created.stored.role_scopes
        )
        sys.stdout.write(encode(view).decode() + "\n")
    else:
        sys.stdout.write(
            f"Rotated API key {old_id} into {key.id} ({', '.join(key.scopes)}); the old "
            f"key works for {args.grace_period} more seconds.\n"
            f"The new key is shown this once; store it now:\n\n    {created.plaintext}\n\n"
        )
    return 0


def migrations_status(dsn: str) -> int:
    """Print each migration as applied (with its time) or pending; 1 when the history
    disagrees with the files (an edited or unknown migration), else 0."""

    async def go() -> int:
        conn = await connect(dsn)
        try:
            states = await migration_status(conn, Queries.load())
        finally:
            await conn.close()
        for state in states:
            when = f"  {iso(state.applied_at)}" if state.applied_at else ""
            sys.stdout.write(f"{state.state:<8} {state.version:04d}_{state.name}{when}\n")
        pending = sum(s.state == "pending" for s in states)
        bad = [s for s in states if s.state in ("changed", "unknown")]
        applied = sum(s.state == "applied" for s in states)
        sys.stdout.write(f"{applied} applied, {pending} pending\n")
        return 1 if bad else 0

    return asyncio.run(go())


def _grace(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a whole number of seconds") from None
    if not 0 <= value <= MAX_GRACE_SECONDS:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_GRACE_SECONDS} seconds")
    return value


def add_key_commands(
    keys_sub: argparse._SubParsersAction[argparse.ArgumentParser],
    run: Callable[[Callable[[Settings, str, argparse.Namespace], int]], Callable[..., int]],
) -> None:
    """`api-keys list|revoke|rotate`; run(command) wraps a command with the settings and
    the database, as `api-keys create` has them."""
    listing = keys_sub.add_parser(
        "list",
        help="list API keys (never their text)",
        description="List API keys, newest first: id, prefix, status, effective scopes, "
        "tenant, last use and name; revoked and expired keys only with --include-revoked.",
    )
    listing.add_argument(
        "--tenant-id", metavar="TENANT", help="only the keys of this tenant (its id or slug)"
    )
    listing.add_argument(
        "--include-revoked", action="store_true", help="list revoked and expired keys too"
    )
    listing.add_argument("--json", action="store_true", help="print the key objects as JSON")
    listing.set_defaults(func=run(list_keys))

    revoke = keys_sub.add_parser(
        "revoke",
        help="revoke a key now (audited)",
        description="Revoke an API key at once, as DELETE /api/v1/api-keys/{id} does; a "
        "revoked key stays revoked. Running services drop it from their caches at once.",
    )
    revoke.add_argument("key", metavar="KEY", help="the key's id or its prefix (sk_test_AbCd)")
    revoke.set_defaults(func=run(revoke_key))

    rotate = keys_sub.add_parser(
        "rotate",
        help="replace a key with a new one and print it once",
        description="Make a new key with the old one's settings and print it once; the old "
        "key is revoked at once or after --grace-period seconds.",
    )
    rotate.add_argument("key", metavar="KEY", help="the key's id or its prefix (sk_test_AbCd)")
    rotate.add_argument(
        "--grace-period",
        type=_grace,
        default=0,
        metavar="SECONDS",
        help=f"how long the old key keeps working (0 to {MAX_GRACE_SECONDS}; default 0)",
    )
    rotate.add_argument(
        "--json", action="store_true", help="print the new key object with plaintext_key"
    )
    rotate.set_defaults(func=run(rotate_key))
