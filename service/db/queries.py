"""Named queries from sql/queries/*.sql, loaded once when the app starts.

Each query sits under a `-- name: verb_object :shape` header followed by a one-line `--`
description (docs/sql.md). Parameters are written `:'name'`, psql's quoted-literal
variable form, so a DBA can `\\set name '...'` and paste the query into psql; loading
compiles them to asyncpg's `$1..$n` in order of first appearance. Duplicate names, a
header without a known shape, a description or text, a `$1` placeholder left in the
text, and (through Repository) a name the code uses but no file defines all fail the
start.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast, get_args

import asyncpg

from service.observability import tracing

Shape = Literal["one", "value", "many", "exec"]
SHAPES: tuple[Shape, ...] = get_args(Shape)
T = TypeVar("T")

_HEADER = re.compile(r"^--\s*name:")
_HEADER_FULL = re.compile(r"^--\s*name:\s*(?P<name>[a-z][a-z0-9_]*)(?:\s+:(?P<shape>\S+))?\s*$")
# What the compiler looks at, outside comments, string literals and quoted identifiers.
_TOKENS = re.compile(
    r"""
      (?P<comment>--[^\n]*)
    | (?P<block>/\*.*?\*/)
    | (?P<param>:'(?P<pname>[a-z][a-z0-9_]*)')
    | (?P<badparam>:'[^']*'|:"[^"]*"|(?<!:):[A-Za-z_][A-Za-z0-9_]*)
    | (?P<string>[EeXxBbUu]?'(?:[^']|'')*')
    | (?P<ident>"(?:[^"]|"")*")
    | (?P<dollar>\$(?P<tag>[A-Za-z_][A-Za-z0-9_]*)?\$)
    | (?P<positional>\$\d+)
    """,
    re.VERBOSE | re.DOTALL,
)


class QueryFileError(Exception):
    """The SQL files are malformed, define a name twice, or lack a name the code uses."""


class QueryUsageError(TypeError):
    """A query was run with the wrong method for its shape or the wrong parameter names."""


class Executor(Protocol):
    """What runs a query: an asyncpg connection or pool."""

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None: ...
    async def fetchval(self, query: str, *args: Any) -> Any: ...
    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]: ...
    async def execute(self, query: str, *args: Any) -> str: ...


@dataclass(frozen=True, slots=True)
class Query:
    """One named query: `sql` is the compiled `$n` text, `text` the file's psql form."""

    name: str
    description: str
    shape: Shape
    sql: str
    params: tuple[str, ...]
    source: str
    text: str
    param_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "param_set", frozenset(self.params))

    def args(self, **params: object) -> list[object]:
        """The keyword parameters as asyncpg's positional list, checking their names."""
        if params.keys() != self.param_set:
            missing = sorted(set(self.params) - params.keys())
            extra = sorted(params.keys() - set(self.params))
            raise QueryUsageError(
                f"query {self.name!r} takes {list(self.params)}; "
                f"missing {missing}, unexpected {extra}"
            )
        return [params[name] for name in self.params]

    def _check(self, shape: Shape) -> None:
        if shape != self.shape:
            raise QueryUsageError(
                f"query {self.name!r} is declared :{self.shape}; run it with "
                f".{self.shape}(), not .{shape}()"
            )

    def _checked_args(self, shape: Shape, params: dict[str, object]) -> list[object]:
        """The arguments, once the method (`shape`) and the parameter names are right."""
        self._check(shape)
        return self.args(**params)

    async def _traced(self, conn: Executor, call: Awaitable[T]) -> T:
        """Await the call, in a span of its own when tracing is on."""
        if tracing.TRACER is None:
            return await call
        async with tracing.query_span(self.name, self.sql, conn):
            return await call

    async def one(self, conn: Executor, /, **params: object) -> asyncpg.Record | None:
        """At most one row (`:one`)."""
        args = self._checked_args("one", params)
        return await self._traced(conn, conn.fetchrow(self.sql, *args))

    async def one_as(
        self, shape: Callable[..., T], conn: Executor, /, **params: object
    ) -> T | None:
        """At most one row (`:one`), as `shape(**row)`."""
        row = await self.one(conn, **params)
        return None if row is None else shape(**row)

    async def value(self, conn: Executor, /, **params: object) -> Any:
        """The first column of the first row, or None (`:value`)."""
        args = self._checked_args("value", params)
        return await self._traced(conn, conn.fetchval(self.sql, *args))

    async def many(self, conn: Executor, /, **params: object) -> list[asyncpg.Record]:
        """Every row (`:many`)."""
        args = self._checked_args("many", params)
        return await self._traced(conn, conn.fetch(self.sql, *args))

    async def many_as(
        self, shape: Callable[..., T], conn: Executor, /, **params: object
    ) -> list[T]:
        """Every row (`:many`), each as `shape(**row)`."""
        return [shape(**row) for row in await self.many(conn, **params)]

    def cursor(
        self, conn: asyncpg.Connection, /, **params: object
    ) -> asyncpg.cursor.CursorFactory[asyncpg.Record]:
        """The rows of a `:many` query through a server-side cursor (inside a
        transaction), for answers too large to hold in memory at once."""
        return conn.cursor(self.sql, *self._checked_args("many", params))

    async def exec(self, conn: Executor, /, **params: object) -> str:
        """Run for its effect; the command status, such as 'UPDATE 3' (`:exec`)."""
        args = self._checked_args("exec", params)
        return await self._traced(conn, conn.execute(self.sql, *args))


def sql_root() -> Path:
    """The sql/ directory: a copy inside an installed wheel, else the repository's own."""
    package_dir = Path(__file__).resolve().parent.parent
    bundled = package_dir / "_sql"
    if bundled.is_dir():
        return bundled
    return package_dir.parent / "sql"


class Queries(Mapping[str, Query]):
    def __init__(self, queries: Mapping[str, Query]) -> None:
        self._queries = dict(queries)

    def __getitem__(self, name: str) -> Query:
        try:
            return self._queries[name]
        except KeyError:
            raise QueryFileError(f"no query named {name!r} in sql/queries") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._queries)

    def __len__(self) -> int:
        return len(self._queries)

    def sql(self, name: str) -> str:
        """The compiled `$n` text (EXPLAIN tests, prepared statements)."""
        return self[name].sql

    @classmethod
    def load(cls, directory: Path | None = None) -> Queries:
        """The queries of `directory` (default: the bundled sql/queries, parsed once per
        process: the files do not change while it runs, and Queries is immutable)."""
        if directory is None:
            return _bundled_queries()
        return cls._parse(directory)

    @classmethod
    def _parse(cls, directory: Path) -> Queries:
        found: dict[str, Query] = {}
        files = sorted(directory.glob("*.sql"))
        if not files:
            raise QueryFileError(f"no query files in {directory}")
        for path in files:
            for query in parse_query_file(path.read_text(encoding="utf-8"), path.name):
                if query.name in found:
                    raise QueryFileError(
                        f"query {query.name!r} is defined in both "
                        f"{found[query.name].source} and {query.source}"
                    )
                found[query.name] = query
        return cls(found)


@functools.cache
def _bundled_queries() -> Queries:
    return Queries._parse(sql_root() / "queries")


def compile_params(text: str, where: str = "query") -> tuple[str, tuple[str, ...]]:
    """`:'name'` -> `$n` (first appearance order, one number per name), ignoring comments,
    string literals, quoted identifiers and dollar-quoted bodies."""
    names: list[str] = []
    out: list[str] = []
    pos = 0
    while (match := _TOKENS.search(text, pos)) is not None:
        out.append(text[pos : match.start()])
        pos = match.end()
        if match["param"]:
            name = match["pname"]
            if name not in names:
                names.append(name)
            out.append(f"${names.index(name) + 1}")
        elif match["badparam"]:
            raise QueryFileError(
                f"{where}: parameter {match['badparam']!r} is not :'lower_snake_name'"
            )
        elif match["positional"]:
            raise QueryFileError(
                f"{where}: positional placeholder {match['positional']} (name it :'parameter_name')"
            )
        elif match["dollar"]:
            end = text.find(match["dollar"], pos)
            if end < 0:
                raise QueryFileError(f"{where}: unterminated {match['dollar']} string")
            out.append(match["dollar"] + text[pos : end + len(match["dollar"])])
            pos = end + len(match["dollar"])
        else:
            out.append(match.group())
    out.append(text[pos:])
    return "".join(out), tuple(names)


def parse_query_file(text: str, source: str) -> list[Query]:
    queries: list[Query] = []
    name: str | None = None
    shape: Shape = "exec"
    description: list[str] = []
    body: list[str] = []
    in_description = False

    def finish() -> None:
        if name is None:
            return
        raw = "\n".join(body).strip().rstrip(";").strip()
        if not description:
            raise QueryFileError(f"{source}: query {name!r} has no description line")
        if not raw:
            raise QueryFileError(f"{source}: query {name!r} has no SQL")
        sql, params = compile_params(raw, f"{source}: query {name!r}")
        queries.append(Query(name, " ".join(description), shape, sql, params, source, raw))

    for line_no, line in enumerate(text.splitlines(), start=1):
        if _HEADER.match(line.strip()):
            finish()
            header = _HEADER_FULL.match(line.strip())
            if header is None:
                raise QueryFileError(f"{source}:{line_no}: malformed header {line.strip()!r}")
            if header["shape"] not in SHAPES:
                raise QueryFileError(
                    f"{source}:{line_no}: query {header['name']!r} needs a shape, one of "
                    + ", ".join(f":{s}" for s in SHAPES)
                    + (f" (not :{header['shape']})" if header["shape"] else "")
                )
            name, shape = header["name"], cast(Shape, header["shape"])
            description, body, in_description = [], [], True
            continue
        if name is None:
            if line.strip() and not line.strip().startswith("--"):
                raise QueryFileError(f"{source}:{line_no}: SQL before the first -- name: header")
            continue
        if in_description and line.strip().startswith("--"):
            description.append(line.strip()[2:].strip())
            continue
        in_description = False
        body.append(line)
    finish()
    return queries
