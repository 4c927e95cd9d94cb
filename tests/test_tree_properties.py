"""Property-based test of the tree through the live API (hypothesis stateful testing).

A RuleBasedStateMachine creates (one or a batch), moves, archives, restores and purges
tenants, and writes config entries and permission policies, over HTTP against the real
app and database. Every rule predicts its answer from the data as it stands (cycle,
archived, children, locks, depth) and checks it. After every step:
- no cycle; the closure table, ancestry_path and depth agree with the parent chain;
- no archived tenant has an active child;
- the context of every tenant the step touched equals a resolution computed here in
  Python from the stored parent chain, config entries and permission policies.

The app runs on a loop of its own in a background thread (hypothesis drives the
machine synchronously). TREE_PROPERTY_EXAMPLES and TREE_PROPERTY_STEPS lengthen the run
(docs/testing.md); CI keeps them small.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from service.settings.options import Settings
from tests.conftest import base_env
from tests.support.invariants import tree_problems
from tests.support.live_app import LiveApp
from tests.support.tree_facts import Facts

EXAMPLES = int(os.environ.get("TREE_PROPERTY_EXAMPLES", "25"))
STEPS = int(os.environ.get("TREE_PROPERTY_STEPS", "25"))
MAX_DEPTH = 5
KEYS = ("theme", "quota", "region")
MODES = ("INHERIT", "LOCKED", "LOCAL")


LIVE: LiveApp | None = None


class TreeMachine(RuleBasedStateMachine):
    tenants = Bundle("tenants")

    def __init__(self) -> None:
        super().__init__()
        assert LIVE is not None
        self.live = LIVE
        self.touched: set[str] = set()

    def facts(self) -> Facts:
        return Facts(self.live)

    def expect(self, status: int, data: Any, wanted: tuple[int, str | None]) -> None:
        code = data["error"]["code"] if data and "error" in data else None
        assert (status, code) == wanted, (status, data, wanted)

    def create_expectation(self, facts: Facts, parent: str | None) -> tuple[int, str | None]:
        if parent is None:
            return 201, None
        if not facts.exists(parent):
            return 404, "TENANT_NOT_FOUND"
        if facts.status[parent] == "archived":
            return 410, "TENANT_ARCHIVED"
        if facts.depth(parent) + 1 > MAX_DEPTH:
            return 409, "DEPTH_LIMIT_EXCEEDED"
        return 201, None

    @initialize(target=tenants)
    def root(self) -> str:
        status, data = self.live.call("POST", "/api/v1/tenants", {"name": "r", "slug": _slug()})
        assert status == 201, data
        self.touched.add(data["id"])
        return str(data["id"])

    @rule(target=tenants, parent=st.one_of(st.none(), tenants))
    def create(self, parent: str | None) -> Any:
        wanted = self.create_expectation(self.facts(), parent)
        body = {"name": "c", "slug": _slug(), "parent_id": parent}
        status, data = self.live.call("POST", "/api/v1/tenants", body)
        self.expect(status, data, wanted)
        if status != 201:
            return multiple()
        self.touched.add(data["id"])
        return str(data["id"])

    @rule(target=tenants, parents=st.lists(st.one_of(st.none(), tenants), min_size=1, max_size=4))
    def batch(self, parents: list[str | None]) -> Any:
        facts = self.facts()
        wanted = [self.create_expectation(facts, p) for p in parents]
        items = [{"name": "b", "slug": _slug(), "parent_id": p} for p in parents]
        status, data = self.live.call("POST", "/api/v1/tenants/batch", {"tenants": items})
        refused = [(i, w) for i, w in enumerate(wanted) if w[0] != 201]
        if not refused:
            assert status == 201, data
            ids = [str(t["id"]) for t in data["created"]]
            self.touched.update(ids)
            return multiple(*ids)
        assert status in (400, 409), data
        assert data["created"] == []
        assert [(e["index"], e["code"]) for e in data["errors"]] == [(i, w[1]) for i, w in refused]
        return multiple()

    @rule(node=tenants, parent=st.one_of(st.none(), tenants))
    def move(self, node: str, parent: str | None) -> None:
        facts = self.facts()
        wanted: tuple[int, str | None]
        # The tenant is judged before the new parent: missing, then archived.
        if not facts.exists(node):
            wanted = (404, "TENANT_NOT_FOUND")
        elif facts.status[node] == "archived":
            wanted = (410, "TENANT_ARCHIVED")
        elif parent is not None and not facts.exists(parent):
            wanted = (404, "TENANT_NOT_FOUND")
        elif parent is not None and facts.status[parent] == "archived":
            wanted = (410, "TENANT_ARCHIVED")
        elif facts.parent[node] == parent:
            wanted = (200, None)
        elif parent is not None and node in facts.chain(parent):
            wanted = (409, "CYCLE_DETECTED")
        elif (0 if parent is None else facts.depth(parent) + 1) + facts.height(node) > MAX_DEPTH:
            wanted = (409, "DEPTH_LIMIT_EXCEEDED")
        else:
            wanted = (200, None)
        status, data = self.live.call(
            "POST", f"/api/v1/tenants/{node}/move", {"new_parent_id": parent}
        )
        self.expect(status, data, wanted)
        if status == 200:
            assert data["parent_id"] == parent
            self.touched.update(facts.subtree(node))

    @rule(node=tenants, parent=tenants)
    def move_under(self, node: str, parent: str) -> None:
        """Moves are the point of the exercise: a second rule makes them twice as likely."""
        self.move(node, parent)

    @rule(node=tenants)
    def archive(self, node: str) -> None:
        facts = self.facts()
        if not facts.exists(node):
            wanted: tuple[int, str | None] = (404, "TENANT_NOT_FOUND")
        elif facts.status[node] == "archived":
            wanted = (410, "TENANT_ARCHIVED")
        elif any(facts.status[c] == "active" for c in facts.children(node)):
            wanted = (409, "HAS_CHILDREN")
        else:
            wanted = (204, None)
        status, data = self.live.call("DELETE", f"/api/v1/tenants/{node}")
        self.expect(status, data, wanted)

    @rule(node=tenants)
    def restore(self, node: str) -> None:
        facts = self.facts()
        parent = facts.parent.get(node)
        if not facts.exists(node):
            wanted: tuple[int, str | None] = (404, "TENANT_NOT_FOUND")
        elif facts.status[node] == "archived" and parent and facts.status[parent] == "archived":
            wanted = (409, "PARENT_ARCHIVED")
        else:
            wanted = (200, None)
        status, data = self.live.call("POST", f"/api/v1/tenants/{node}/restore")
        self.expect(status, data, wanted)
        if status == 200:
            assert data["status"] == "active"
            self.touched.add(node)

    @rule(node=tenants, cascade=st.booleans())
    def purge(self, node: str, cascade: bool) -> None:
        facts = self.facts()
        if not facts.exists(node):
            status, data = self.live.call(
                "POST", f"/api/v1/tenants/{node}/purge", {"confirm": "gone", "cascade": cascade}
            )
            self.expect(status, data, (404, "TENANT_NOT_FOUND"))
            return
        slug = self.live.fetch("SELECT slug FROM tenants WHERE id = $1", uuid.UUID(node))[0][0]
        wanted = (409, "HAS_CHILDREN") if facts.children(node) and not cascade else (200, None)
        status, data = self.live.call(
            "POST", f"/api/v1/tenants/{node}/purge", {"confirm": slug, "cascade": cascade}
        )
        self.expect(status, data, wanted)
        if status == 200:
            assert data["counts"]["tenants"] == len(facts.subtree(node))
            self.touched -= set(facts.subtree(node))

    @rule(node=tenants, key=st.sampled_from(KEYS), value=st.integers(0, 9), locked=st.booleans())
    def put_config(self, node: str, key: str, value: int, locked: bool) -> None:
        facts = self.facts()
        if not facts.exists(node):
            wanted: tuple[int, str | None] = (404, "TENANT_NOT_FOUND")
        elif facts.status[node] == "archived":
            wanted = (410, "TENANT_ARCHIVED")
        elif facts.locked_config_above(node, key):
            wanted = (409, "CONFIG_LOCKED")
        else:
            wanted = (200 if key in facts.config.get(node, {}) else 201, None)
        status, data = self.live.call(
            "PUT", f"/api/v1/tenants/{node}/config/{key}", {"value": value, "locked": locked}
        )
        self.expect(status, data, wanted)
        if status < 300:
            self.touched.update(facts.subtree(node))

    @rule(node=tenants, key=st.sampled_from(KEYS), value=st.booleans(), mode=st.sampled_from(MODES))
    def put_permission(self, node: str, key: str, value: bool, mode: str) -> None:
        facts = self.facts()
        if not facts.exists(node):
            wanted: tuple[int, str | None] = (404, "TENANT_NOT_FOUND")
        elif facts.status[node] == "archived":
            wanted = (410, "TENANT_ARCHIVED")
        elif facts.locked_permission_above(node, key):
            wanted = (409, "PERMISSION_LOCKED")
        else:
            wanted = (200 if key in facts.permissions.get(node, {}) else 201, None)
        status, data = self.live.call(
            "PUT", f"/api/v1/tenants/{node}/permissions/{key}", {"value": value, "mode": mode}
        )
        self.expect(status, data, wanted)
        if status < 300:
            self.touched.update(facts.subtree(node))

    @invariant()
    def tree_is_consistent(self) -> None:
        assert self.live.run(tree_problems(self._conn())) == []

    @invariant()
    def contexts_match_the_reference(self) -> None:
        facts = self.facts()
        for tenant in sorted(self.touched):
            if not facts.exists(tenant) or facts.status[tenant] == "archived":
                continue
            status, data = self.live.call("GET", f"/api/v1/tenants/{tenant}/context")
            assert status == 200, data
            data.pop("isolation_strategy")
            assert data == facts.context(tenant), tenant
        self.touched.clear()

    def _conn(self) -> asyncpg.Connection:
        assert self.live.conn is not None
        return self.live.conn


def _slug() -> str:
    return f"p_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def live(fresh_db_url: str, tmp_path: Path) -> Iterator[LiveApp]:
    global LIVE
    env = base_env(fresh_db_url, tmp_path, MAX_TENANT_DEPTH=str(MAX_DEPTH), WEBHOOK_CONCURRENCY="0")
    LIVE = LiveApp(Settings.from_env(env))
    try:
        yield LIVE
    finally:
        LIVE.close()
        LIVE = None


def test_the_tree_keeps_its_invariants_under_random_operations(live: LiveApp) -> None:
    run_state_machine_as_test(
        TreeMachine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            print_blob=True,
        ),
    )
