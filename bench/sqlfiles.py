"""The benchmark suite's named queries: sql/bench/*.sql, never loaded by the service."""

from __future__ import annotations

from functools import cache

from service.db.queries import Queries, sql_root


@cache
def bench_queries() -> Queries:
    return Queries.load(sql_root() / "bench")
