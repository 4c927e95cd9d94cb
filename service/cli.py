"""The tenant-service command: serve (default), migrate [--status], api-keys
create|list|revoke|rotate (the last three in service/cli_admin.py)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from uuid import UUID

import asyncpg
from dotenv import dotenv_values

from service.auth.keys import Environment, default_environment
from service.auth.principal import SCOPES, SYSTEM_ACTOR
from service.base.errors import ServiceError
from service.cli_admin import add_key_commands, migrations_status, unreachable_database
from service.db.errors import translate_db_error
from service.db.migrations import apply_migrations
from service.db.pool import connect
from service.db.queries import Queries
from service.observability.logs import configure_logging, get_logger
from service.repositories.registry import Repositories
from service.settings.options import ConfigError, Settings, listen_address
from service.usecases.common.recording import ChangeRecorder
from service.usecases.keys.issuing import IssuedKey, issue_api_key
from service.views.base import encode
from service.views.keys import ApiKeyWithPlaintext

log = get_logger("service.cli")


def _read_dotenv(path: Path = Path(".env")) -> dict[str, str]:
    """A development .env file, read by python-dotenv (`export KEY=...`, quotes, escapes,
    comments, multi-line values); the real environment wins over it."""
    if not path.is_file():
        return {}
    return {k: v for k, v in dotenv_values(path).items() if v is not None}


def settings_env() -> dict[str, str]:
    import os

    return {**_read_dotenv(), **os.environ}


def load_settings() -> Settings:
    env = settings_env()
    try:
        return Settings.from_env(env)
    except ConfigError as exc:
        sys.stderr.write(f"tenant-service: {exc}\n")
        raise SystemExit(2) from None


@contextlib.contextmanager
def database(settings: Settings) -> Iterator[Settings]:
    """Settings with a database_url: the configured one, or an embedded server's."""
    if settings.database_url is not None:
        yield settings
        return
    from service.embedded import EmbeddedPostgres, EmbeddedUnavailable

    try:
        server = EmbeddedPostgres.start(settings.data_dir)
    except EmbeddedUnavailable as exc:
        sys.stderr.write(f"tenant-service: {exc}\n")
        raise SystemExit(2) from None
    try:
        yield replace(settings, database_url=server.dsn)
    finally:
        server.stop()


def cmd_serve(args: argparse.Namespace) -> int:
    from service.server import PortUnavailable, bind, check_port, serve

    address = listen_address(settings_env())
    if address is not None and args.worker_of is None:
        # A taken port is found before the settings write DATA_DIR/secrets.json.
        host, port, workers = address
        host = host if args.host is None else args.host
        port = port if args.port is None else args.port
        try:
            bind(host, port, reuse_port=(args.workers or workers) > 1).close()
        except PortUnavailable as exc:
            sys.stderr.write(f"tenant-service: {exc}\n")
            return 1
    settings = load_settings()
    if args.port is not None:
        settings = replace(settings, port=args.port)
    if args.host is not None:
        settings = replace(settings, host=args.host)
    if args.workers is not None:
        settings = replace(settings, workers=args.workers)
    configure_logging(settings.log_level)
    try:
        if args.worker_of is not None:
            # A worker of `serve --workers N`: the parent checked the settings and started
            # the database; this process serves on the shared port until told to stop.
            serve(settings, reuse_port=True, parent_pid=args.worker_of)
            return 0
        # A taken port is found before an embedded database is started for nothing.
        check_port(settings, reuse_port=settings.workers > 1)
        return _serve_with_database(settings)
    except PortUnavailable as exc:
        sys.stderr.write(f"tenant-service: {exc}\n")
        return 1


def _serve_with_database(settings: Settings) -> int:
    from service.server import serve

    _warn_about_secrets(settings)
    with database(settings) as ready:
        log.info(
            "service starting",
            port=ready.port,
            workers=ready.workers,
            environment=ready.environment,
            database="external" if settings.database_url else "embedded",
        )
        if ready.workers > 1:
            from service.workers import Supervisor

            _warn_about_split_limits(ready)
            code = Supervisor(ready, ready.workers).run()
        else:
            serve(ready)
            code = 0
        log.info("service stopped")
    return code


def _workers(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError("must be between 1 and 64")
    return value


def _warn_about_split_limits(settings: Settings) -> None:
    if settings.redis_url is None:
        log.warning(
            "rate limits split between workers: without REDIS_URL each worker keeps its "
            "own buckets and allows its share of every limit (limit // workers, at least "
            "1); set REDIS_URL to share one bucket per caller",
            workers=settings.workers,
            rate_limit_max=settings.rate_limit_max,
            rate_limit_max_per_worker=max(1, settings.rate_limit_max // settings.workers),
        )


def _warn_about_secrets(settings: Settings) -> None:
    if settings.generated_secrets:
        log.warning(
            "development secrets in use: generated once and kept in DATA_DIR; "
            "set them in the environment for production",
            secrets=list(settings.generated_secrets),
            file=str(settings.data_dir / "secrets.json"),
        )


def cmd_migrate(args: argparse.Namespace) -> int:
    settings = load_settings()
    configure_logging(settings.log_level, stream=sys.stderr)
    if args.status:
        with database(settings) as ready:
            assert ready.database_url is not None
            return migrations_status(ready.database_url)

    async def run(dsn: str) -> list[str]:
        conn = await connect(dsn)
        try:
            done = await apply_migrations(conn, Queries.load())
        finally:
            await conn.close()
        return [f"{m.version:04d}_{m.name}" for m in done]

    with database(settings) as ready:
        # A session advisory lock: DATABASE_LISTEN_URL when set (never PgBouncer's).
        assert ready.direct_database_url is not None
        applied = asyncio.run(run(ready.direct_database_url))
    log.info("migrations applied", applied=applied, count=len(applied))
    return 0


def cmd_create_key(args: argparse.Namespace) -> int:
    settings = load_settings()
    configure_logging(settings.log_level, stream=sys.stderr)
    scopes = [s.strip() for s in args.scopes.split(",") if s.strip()]
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown or not scopes:
        sys.stderr.write(f"tenant-service: --scopes takes a list of {', '.join(SCOPES)}\n")
        return 2
    if not 1 <= len(args.name) <= 255:
        sys.stderr.write("tenant-service: --name must be 1 to 255 characters\n")
        return 2
    environment: Environment = (
        "test" if args.test else "live" if args.live
        else default_environment(settings.is_production, settings.api_key_environments)
    )  # fmt: skip
    if environment not in settings.api_key_environments:
        sys.stderr.write(
            f"tenant-service: API_KEY_ENVIRONMENTS does not accept {environment} keys\n"
        )
        return 2

    async def run(dsn: str) -> IssuedKey:
        queries = Queries.load()
        conn = await connect(dsn)
        try:
            await apply_migrations(conn, queries)
            repos = Repositories.build(queries)
            async with conn.transaction():
                tenant_id = await _tenant_named(conn, repos, args.tenant_id)
                return await issue_api_key(
                    conn,
                    keys=repos.api_keys,
                    recorder=ChangeRecorder(repos.outbox),
                    hmac_secret=settings.api_key_hmac_secret,
                    actor=SYSTEM_ACTOR,
                    name=args.name,
                    scopes=scopes,
                    tenant_id=tenant_id,
                    environment=environment,
                )
        finally:
            await conn.close()

    with database(settings) as ready:
        assert ready.database_url is not None
        try:
            issued = asyncio.run(run(ready.database_url))
        except ServiceError as err:
            sys.stderr.write(f"tenant-service: {err.message} ({err.code})\n")
            return 1
        except Exception as exc:  # a CLI reports the reason; it does not trace back
            translated = translate_db_error(exc)
            reason = translated.message if translated else str(exc)
            sys.stderr.write(f"tenant-service: could not create the key: {reason}\n")
            return 1
    if args.json:
        view = ApiKeyWithPlaintext.issued(issued.key, issued.plaintext)
        sys.stdout.write(encode(view).decode() + "\n")
    else:
        sys.stdout.write(
            f"Created API key {issued.key.id} ({', '.join(issued.key.scopes)}).\n"
            f"It is shown this once; store it now:\n\n    {issued.plaintext}\n\n"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tenant-service",
        description="Tenant Hierarchy Service: a JSON API for a forest of tenants with "
        "inherited config and permissions. Configuration comes from the environment "
        "(see docs/operations.md); with DATABASE_URL unset an embedded PostgreSQL "
        "is started under DATA_DIR.",
    )
    parser.add_argument("--version", action="version", version=f"tenant-service {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the HTTP service (the default command)",
        description="Run the HTTP JSON API. Migrations are applied first (under an advisory "
        "lock, so replicas may start together). With DATABASE_URL unset an embedded "
        "PostgreSQL is started under DATA_DIR and stopped with the service; in development "
        "a first start with no keys prints an admin key once. SIGTERM or SIGINT stops "
        "gracefully: no new connections, in-flight requests finish within "
        "SHUTDOWN_TIMEOUT_SECONDS, then the pool and the database close and the exit "
        "code is 0.",
        epilog="Endpoints without credentials: /health, /ready and /api/v1/openapi.json; "
        "/metrics on METRICS_PORT, or with METRICS_TOKEN. Configuration: "
        "docs/operations.md.",
    )
    serve.add_argument(
        "--port", type=_port, help="listening port, 1 to 65535 (default: PORT or 8080)"
    )
    serve.add_argument("--host", help="listening address (default: HOST or 0.0.0.0)")
    serve.add_argument(
        "--workers",
        type=_workers,
        metavar="N",
        help="run N processes on the one port with SO_REUSEPORT (default: WORKERS or 1); "
        "they share only PostgreSQL and Redis",
    )
    # Internal: how the parent of `--workers N` starts each worker.
    serve.add_argument("--worker-of", type=int, metavar="PID", help=argparse.SUPPRESS)
    serve.set_defaults(func=cmd_serve)

    migrate = sub.add_parser(
        "migrate",
        help="apply the SQL migrations and exit",
        description="Apply the pending files of sql/migrations in order, each in its own "
        "transaction under an advisory lock, and record them with their checksums. An "
        "edited migration that was already applied stops the run. `serve` does the same "
        "at every start; this command is for deployments that migrate as a separate step.",
    )
    migrate.add_argument(
        "--status",
        action="store_true",
        help="list applied (with their time) and pending migrations, apply nothing; exit 1 "
        "when an applied file was edited or the database has a version no file defines",
    )
    migrate.set_defaults(func=cmd_migrate)

    keys = sub.add_parser(
        "api-keys",
        help="manage API keys from the command line",
        description="API keys without the HTTP API: the way to the first admin key in "
        "production. Talks to DATABASE_URL (or the embedded database under DATA_DIR) and "
        "needs the same SERVICE_API_KEY_HMAC_SECRET as the service.",
    )
    keys_sub = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = keys_sub.add_parser(
        "create",
        help="create a key and print it once (only its HMAC is stored)",
        description="Create an API key and print it once on stdout; only its HMAC is "
        "stored, so it cannot be shown again (rotate it through the API instead).",
    )
    create.add_argument("--name", required=True, help="a name to recognise the key by")
    create.add_argument(
        "--scopes", default="read", help="comma-separated scopes: read,write,admin (default read)"
    )
    create.add_argument(
        "--tenant-id",
        metavar="TENANT",
        help="restrict the key to this tenant and its descendants (its id or slug)",
    )
    environment = create.add_mutually_exclusive_group()
    environment.add_argument(
        "--test", action="store_true", help="make an sk_test_ key (the default outside production)"
    )
    environment.add_argument(
        "--live",
        action="store_true",
        help="make an sk_live_ key (the default when SERVICE_ENV=production)",
    )
    create.add_argument(
        "--json", action="store_true", help="print the key object with plaintext_key as JSON"
    )
    create.set_defaults(func=cmd_create_key)
    add_key_commands(keys_sub, _with_database)
    return parser


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number from 1 to 65535") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a number from 1 to 65535")
    return value


def _version() -> str:
    try:
        return package_version("tenant-hierarchy-service")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _with_database(
    command: Callable[[Settings, str, argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """A command given the settings and a database URL (the embedded one when unset)."""

    def run(args: argparse.Namespace) -> int:
        settings = load_settings()
        configure_logging(settings.log_level, stream=sys.stderr)
        with database(settings) as ready:
            assert ready.database_url is not None
            return command(ready, ready.database_url, args)

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        args = parser.parse_args(["serve", *(argv or [])])
    try:
        result: int = args.func(args)
    except Exception as exc:  # an unreachable database is one line, not a traceback
        reason = unreachable_database(exc)
        if reason is None:
            raise
        sys.stderr.write(f"tenant-service: {reason}\n")
        return 1
    return result


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


async def _tenant_named(
    conn: asyncpg.Connection, repos: Repositories, text: str | None
) -> UUID | None:
    """The tenant a --tenant-id names: its id (checked to exist) or its slug."""
    if text is None:
        return None
    try:
        tenant_id = UUID(text)
    except ValueError:
        found = await repos.tenants.get_tenant_by_slug(conn, text)
    else:
        found = await repos.tenants.get_tenant(conn, tenant_id)
    if found is None:
        raise ServiceError("TENANT_NOT_FOUND", f"no tenant has the id or slug {text!r}")
    return found.id
