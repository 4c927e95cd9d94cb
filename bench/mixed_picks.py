"""The tenants of the mixed-workload benchmark (bench/mixed.py), picked from the seeded
forest: leaves to read contexts of, their ancestors near the top of their trees to write
config to, and a subtree (holding some of those leaves) to move back and forth."""

from __future__ import annotations

import random
from dataclasses import dataclass

from bench.shapes import Forest

READ_TENANTS = 2_500
# Writes go to tenants this many levels below their roots: every write reaches the
# contexts of a whole branch, as an admin's change near the top of a customer's tree does.
WRITE_DEPTH = 2
# The moved subtree: the one rooted one level below the written tenants whose size is
# closest to this, so a move is a real subtree change that a 1/s rate can keep up with.
MOVE_SIZE = 100


@dataclass(frozen=True)
class MixedPicks:
    reads: list[str]
    writes: list[str]
    move_subject: str | None
    move_parent: str | None
    moved_tenants: int


def pick_mixed(forest: Forest, seed: int, count: int = READ_TENANTS) -> MixedPicks:
    parents, depths, ids = forest.parents, forest.depths, forest.ids
    has_child = bytearray(len(forest))
    sizes = [1] * len(forest)
    for node in range(len(forest) - 1, -1, -1):  # children come after their parents
        parent = parents[node]
        if parent >= 0:
            has_child[parent] = 1
            sizes[parent] += sizes[node]
    leaves = [n for n in range(len(forest)) if not has_child[n] and depths[n] > WRITE_DEPTH]
    reads = random.Random(seed).sample(leaves, min(count, len(leaves)))

    def ancestor_at(node: int, depth: int) -> int:
        while depths[node] > depth:
            node = parents[node]
        return node

    writes = sorted({ancestor_at(node, WRITE_DEPTH) for node in reads})
    below = sorted({ancestor_at(node, WRITE_DEPTH + 1) for node in reads})
    subject = min(below, key=lambda n: abs(sizes[n] - MOVE_SIZE)) if below else None
    return MixedPicks(
        reads=[str(ids[n]) for n in reads],
        writes=[str(ids[n]) for n in writes],
        move_subject=None if subject is None else str(ids[subject]),
        move_parent=None if subject is None else str(ids[parents[subject]]),
        moved_tenants=0 if subject is None else sizes[subject],
    )
