"""Reading EXPLAIN (FORMAT JSON) plans in query-plan tests."""

from __future__ import annotations

from typing import Any


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan node and every node below it, depth first."""
    found = [plan]
    for child in plan.get("Plans", []):
        found += nodes(child)
    return found
