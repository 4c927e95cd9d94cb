"""The base of the thin repositories: one class per aggregate, one method per query.

A repository declares the queries it runs as `NamedSql` attributes; constructing it
checks that every one exists, so a missing name fails at start, not on first use.
`self._get` is then the loaded Query, run by its declared shape with keyword
parameters only: `await self._get.one(conn, tenant_id=tenant_id)`.
Methods take the connection first, so the caller owns the transaction.
"""

from __future__ import annotations

from typing import Any, overload

from service.db.queries import Queries, Query


class NamedSql:
    """A descriptor giving the loaded Query of a name (run it with .one/.value/.many/.exec)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> NamedSql: ...
    @overload
    def __get__(self, obj: Repository, owner: type[Any]) -> Query: ...
    def __get__(self, obj: Repository | None, owner: type[Any]) -> NamedSql | Query:
        if obj is None:
            return self
        return obj.queries[self.name]


class Repository:
    def __init__(self, queries: Queries) -> None:
        self.queries = queries
        for name in self.query_names():
            queries[name]  # raises QueryFileError for an unknown name

    @classmethod
    def query_names(cls) -> set[str]:
        names: set[str] = set()
        for klass in cls.__mro__:
            for value in vars(klass).values():
                if isinstance(value, NamedSql):
                    names.add(value.name)
        return names
