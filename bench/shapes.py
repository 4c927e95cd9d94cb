"""Tree shapes for the benchmark database, all drawn from one fixed random seed.

A forest is built in memory as parallel lists (parents before children) and streamed to
PostgreSQL by bench/seed.py. The shapes:

- wide: one root with `wide_children` children (100,000 at a million tenants);
- deep: `deep_chains` chains down to depth 15, and one chain down to depth 31;
- balanced: fan-out 10 down to `balanced_depth` (5 levels below the root: 111,111 nodes);
- sized: roots with exactly 100, 999 and 10,000 descendants (descendants and moves);
- context: one chain of depth 10 whose every level holds 20 config entries (10 keys
  shared by all levels, so inheritance has something to resolve, and 10 of its own)
  and 5 permission policies;
- realistic: the rest, Zipf-like fan-out (a few tenants with very many children, most
  with none), depth at most 12, config entries and permission policies on 30 % of
  tenants of which 5 % are locked, never under an ancestor's lock on the same key.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

REALISTIC_MAX_DEPTH = 12
DEEP_CHAIN_DEPTH = 15
DEEPEST_CHAIN_DEPTH = 31
CONTEXT_CHAIN_DEPTH = 10
WIDEST_CHILDREN = 100_000
CONTEXT_ENTRIES_PER_LEVEL = 20
CONFIG_KEYS = [f"feature.k{i}" for i in range(50)]
PERMISSION_KEYS = [f"perm.p{i}" for i in range(30)]


@dataclass(frozen=True)
class SeedPlan:
    total: int
    wide_children: int
    deep_chains: int
    balanced_depth: int
    sized: bool = True
    seed: int = 20261122

    @classmethod
    def for_total(cls, total: int, seed: int = 20261122) -> SeedPlan:
        """Shapes scaled to `total`: a tenth of it under the wide root (at most
        WIDEST_CHILDREN: beyond a million tenants the widest node and the largest move stay
        those of the full run), the largest balanced tree that fits in a ninth of it, 100
        deep chains (fewer when small)."""
        if total < 1_000:
            raise ValueError("seed at least 1,000 tenants")
        depth = 1
        while (10 ** (depth + 2) - 1) // 9 <= total // 9:
            depth += 1
        return cls(
            total=total,
            wide_children=min(total // 10, WIDEST_CHILDREN),
            deep_chains=min(100, total // 1_000),
            balanced_depth=depth,
            # The sized subtrees (11,100 tenants) would swamp a small database.
            sized=total >= 50_000,
            seed=seed,
        )


@dataclass
class Forest:
    """Nodes in creation order (parents first). Entries are (node, key, value_json, flag):
    for config the flag is `locked`, for permissions the mode."""

    ids: list[uuid.UUID] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # -1 for a root
    depths: list[int] = field(default_factory=list)
    config: list[tuple[int, str, str, bool]] = field(default_factory=list)
    permissions: list[tuple[int, str, bool, str]] = field(default_factory=list)
    landmarks: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, rng: random.Random, parent: int) -> int:
        self.ids.append(uuid.UUID(bytes=rng.randbytes(16), version=4))
        self.parents.append(parent)
        self.depths.append(0 if parent < 0 else self.depths[parent] + 1)
        return len(self.ids) - 1

    def chain(self, rng: random.Random, depth: int) -> list[int]:
        nodes = [self.add(rng, -1)]
        for _ in range(depth):
            nodes.append(self.add(rng, nodes[-1]))
        return nodes

    def closure(self) -> Iterator[tuple[uuid.UUID, uuid.UUID, int]]:
        """Every (ancestor, descendant, distance) pair, the node itself at distance 0."""
        ids, parents = self.ids, self.parents
        for node, node_id in enumerate(ids):
            distance, current = 0, node
            while current >= 0:
                yield ids[current], node_id, distance
                current = parents[current]
                distance += 1


def build_forest(plan: SeedPlan) -> Forest:
    rng = random.Random(plan.seed)
    forest = Forest()
    _wide(forest, rng, plan)
    _deep(forest, rng, plan)
    _balanced(forest, rng, plan)
    _context_chain(forest, rng)
    if plan.sized:
        _sized(forest, rng, "sized_100", 10, 9)
        _sized(forest, rng, "sized_1k", 27, 36)
        _sized(forest, rng, "sized_10k", 100, 99)
    forest.landmarks["move_target"] = forest.add(rng, -1)
    _realistic(forest, rng, plan.total - len(forest))
    return forest


def _wide(forest: Forest, rng: random.Random, plan: SeedPlan) -> None:
    root = forest.add(rng, -1)
    forest.landmarks["wide_root"] = root
    for _ in range(plan.wide_children):
        forest.add(rng, root)
    forest.landmarks["wide_leaf"] = len(forest) - 1


def _deep(forest: Forest, rng: random.Random, plan: SeedPlan) -> None:
    for _ in range(plan.deep_chains):
        chain = forest.chain(rng, DEEP_CHAIN_DEPTH)
    forest.landmarks["deep15_leaf"] = chain[-1]
    deepest = forest.chain(rng, DEEPEST_CHAIN_DEPTH)
    forest.landmarks["deep31_leaf"] = deepest[-1]
    for depth, node in enumerate(deepest):  # the depth sweep (bench/depths.py)
        forest.landmarks[f"deep31_d{depth}"] = node


def _balanced(forest: Forest, rng: random.Random, plan: SeedPlan) -> None:
    level = [forest.add(rng, -1)]
    forest.landmarks["balanced_root"] = level[0]
    for depth in range(1, plan.balanced_depth + 1):
        level = [forest.add(rng, parent) for parent in level for _ in range(10)]
        forest.landmarks[f"balanced_d{depth}"] = level[0]


def _sized(forest: Forest, rng: random.Random, name: str, children: int, each: int) -> None:
    """A root with exactly children * (1 + each) descendants, for descendants and moves."""
    root = forest.add(rng, -1)
    forest.landmarks[name] = root
    for _ in range(children):
        child = forest.add(rng, root)
        for _ in range(each):
            forest.add(rng, child)
    forest.landmarks[f"{name}_leaf"] = len(forest) - 1
    forest.landmarks[f"{name}_leaf_parent"] = child


def _context_chain(forest: Forest, rng: random.Random) -> None:
    chain = forest.chain(rng, CONTEXT_CHAIN_DEPTH)
    for depth, node in enumerate(chain):
        forest.landmarks[f"context_d{depth}"] = node
        for i in range(CONTEXT_ENTRIES_PER_LEVEL // 2):
            forest.config.append((node, f"ctx.shared{i}", f'{{"level": {depth}}}', False))
            forest.config.append((node, f"ctx.l{depth}.k{i}", str(rng.randrange(1000)), False))
        for i in range(5):
            forest.permissions.append((node, f"ctx.perm{i}", rng.random() < 0.5, "INHERIT"))


def _realistic(forest: Forest, rng: random.Random, count: int) -> None:
    """Each new tenant takes as parent an earlier realistic tenant drawn with a strong
    bias to the earliest ones (index * u^3), which gives the heavy-tailed fan-out of real
    customer trees; one in a thousand starts a new root."""
    if count <= 0:
        return
    start = len(forest)
    depths = forest.depths
    locked_config: dict[int, frozenset[str]] = {}
    locked_perms: dict[int, frozenset[str]] = {}
    for _ in range(count):
        made = len(forest) - start
        parent = -1
        if made and rng.random() >= 0.001:
            for _attempt in range(4):
                candidate = start + int(made * rng.random() ** 3)
                if depths[candidate] < REALISTIC_MAX_DEPTH:
                    parent = candidate
                    break
        node = forest.add(rng, parent)
        inherited_config = locked_config.get(parent, frozenset())
        inherited_perms = locked_perms.get(parent, frozenset())
        if rng.random() < 0.30:
            own_config = _entries_for(forest, rng, node, inherited_config)
            own_perms = _policies_for(forest, rng, node, inherited_perms)
            inherited_config = inherited_config | own_config
            inherited_perms = inherited_perms | own_perms
        if inherited_config:
            locked_config[node] = inherited_config
        if inherited_perms:
            locked_perms[node] = inherited_perms
    forest.landmarks["realistic_first"] = start


def sample_nodes(forest: Forest, count: int, seed: int) -> list[int]:
    """Tenants to spread reads over: drawn from the realistic part (all when small)."""
    first = forest.landmarks.get("realistic_first", 0)
    pool = range(first, len(forest)) if len(forest) - first >= count else range(len(forest))
    return random.Random(seed).sample(pool, min(count, len(pool)))


def _entries_for(
    forest: Forest, rng: random.Random, node: int, locked_above: frozenset[str]
) -> frozenset[str]:
    locked: set[str] = set()
    for key in rng.sample(CONFIG_KEYS, rng.randint(1, 4)):
        if key in locked_above:
            continue
        lock = rng.random() < 0.05
        forest.config.append((node, key, str(rng.randrange(10_000)), lock))
        if lock:
            locked.add(key)
    return frozenset(locked)


def _policies_for(
    forest: Forest, rng: random.Random, node: int, locked_above: frozenset[str]
) -> frozenset[str]:
    locked: set[str] = set()
    for key in rng.sample(PERMISSION_KEYS, rng.randint(1, 3)):
        if key in locked_above:
            continue
        draw = rng.random()
        mode = "LOCKED" if draw < 0.05 else "LOCAL" if draw < 0.10 else "INHERIT"
        forest.permissions.append((node, key, rng.random() < 0.5, mode))
        if mode == "LOCKED":
            locked.add(key)
    return frozenset(locked)
