"""Named queries from sql/queries/*.sql, loaded once when the app starts.

Each query sits under a `-- name: verb_object` header followed by a one-line `--`
description. Duplicate names, a header without a description or text, and (through
Repository) a name the code uses but no file defines all fail the start.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

_HEADER = re.compile(r"^--\s*name:\s*(?P<name>[a-z][a-z0-9_]*)\s*$")


class QueryFileError(Exception):
    """The SQL files are malformed, define a name twice, or lack a name the code uses."""


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    description: str
    sql: str
    source: str


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
        return self[name].sql

    @classmethod
    def load(cls, directory: Path | None = None) -> Queries:
        directory = directory or sql_root() / "queries"
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


def parse_query_file(text: str, source: str) -> list[Query]:
    queries: list[Query] = []
    name: str | None = None
    description: list[str] = []
    body: list[str] = []
    in_description = False

    def finish() -> None:
        if name is None:
            return
        sql = "\n".join(body).strip().rstrip(";").strip()
        if not description:
            raise QueryFileError(f"{source}: query {name!r} has no description line")
        if not sql:
            raise QueryFileError(f"{source}: query {name!r} has no SQL")
        queries.append(Query(name, " ".join(description), sql, source))

    for line_no, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line.strip())
        if header:
            finish()
            name, description, body, in_description = header["name"], [], [], True
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
