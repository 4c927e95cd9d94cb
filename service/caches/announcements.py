"""What a change announcement on tenant_service_tenant_data says (migration 0020).

A payload is either a marker (`marker:<token>`, sent by a writing request after its
commit so it can tell when every announcement before it has been heard; notifications
arrive in commit order), or space-separated items of one letter and a tenant id:
`o` the tenant's own row, `c` its config entries or permission policies, `s` its
position (a move) or its deletion. `*`, and anything this code does not understand (an
older or newer trigger), means everything.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

Kind = Literal["tenant", "context"]
MARKER_PREFIX = "marker:"


@dataclass(frozen=True, slots=True)
class Marker:
    token: str


@dataclass(frozen=True, slots=True)
class Change:
    """Tenant ids (as in ancestry paths) by what changed about them."""

    own: frozenset[str] = frozenset()  # its tenant document and its context
    entries: frozenset[str] = frozenset()  # its document; contexts of it and below it
    subtree: frozenset[str] = frozenset()  # documents and contexts of it and below it
    everything: bool = False

    def touches(self, kind: Kind, tenant_id: str, path_ids: Collection[str]) -> bool:
        """Whether a document of `kind` for the tenant at `path_ids` (the ids of its
        ancestry path, itself last) may have changed."""
        if self.everything or tenant_id in self.own:
            return True
        if kind == "tenant" and tenant_id in self.entries:
            return True
        below = self.subtree if kind == "tenant" else self.subtree | self.entries
        return not below.isdisjoint(path_ids)


EVERYTHING = Change(everything=True)


def parse(payload: str) -> Change | Marker:
    if payload.startswith(MARKER_PREFIX):
        return Marker(payload[len(MARKER_PREFIX) :])
    own: set[str] = set()
    entries: set[str] = set()
    subtree: set[str] = set()
    sets = {"o": own, "c": entries, "s": subtree}
    for item in payload.split():
        target = sets.get(item[:1])
        if target is None or len(item) != 37:
            return EVERYTHING
        try:
            target.add(str(UUID(item[1:])))  # the form paths use
        except ValueError:
            return EVERYTHING
    if not (own or entries or subtree):
        return EVERYTHING
    return Change(frozenset(own), frozenset(entries), frozenset(subtree))


def path_ids(ancestry_path: str) -> list[str]:
    """'/a/b/c' -> ['a', 'b', 'c']: the tenant's ancestors, root first, itself last."""
    return ancestry_path.split("/")[1:]
