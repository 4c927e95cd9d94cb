"""ContextCache against the real service: after random sequences of changes (config and
permission writes and deletes, locks, moves into and out of the subtree, archive,
restore, batch creates), the contexts the stream-fed cache holds equal GET /context for
every tenant of the subtree, and no other; callbacks carry the old and new context;
read-your-writes through `min_revision`."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from tenant_context import ApiError, Client, ContextCache
from tests.support.client_service import issue_key, live  # noqa: F401 (fixture)
from tests.support.live_app import LiveApp
from tests.support.tcp_proxy import TcpProxy

WAIT = 10.0


def slug() -> str:
    return "c" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def api(live: LiveApp) -> Client:  # noqa: F811
    return Client(live.base, api_key=issue_key(live))


def subtree(api: Client, root_id: str) -> set[str]:
    return {root_id} | {t["id"] for t in api.descendants(root_id)}


def settle(api: Client, cache: ContextCache, sentinel: str, step: int) -> None:
    """A write to a leaf of the subtree (one event), then wait for the cache to apply
    it: every earlier change has then reached the cache (the stream is in revision
    order)."""
    api.put_config(sentinel, "settle", step)
    meta = api.last_response
    assert meta is not None
    assert meta.revision is not None
    assert cache.wait_for(sentinel, meta.revision, WAIT), (cache.revision, meta.revision)


def assert_mirrors(api: Client, cache: ContextCache, root_id: str) -> None:
    members = subtree(api, root_id)
    assert set(cache.tenant_ids()) == members
    for tenant_id in members:
        assert cache.get(tenant_id) == api.get_context(tenant_id), tenant_id


class World:
    """A subtree under `root` and a tree `outside` it, changed at random."""

    def __init__(self, api: Client, seed: int) -> None:
        self.api = api
        self.rng = random.Random(seed)
        self.root = api.create_tenant("Root", slug(), config={"plan": "free"})["id"]
        self.outside = api.create_tenant("Outside", slug())["id"]
        self.archived: list[str] = []
        # A leaf that random changes never touch: settle() writes to it.
        self.sentinel = api.create_tenant("Sentinel", slug(), parent_id=self.root)["id"]
        for _ in range(6):
            self.create(self.rng.choice(self.members()))

    def members(self) -> list[str]:
        return sorted(subtree(self.api, self.root) - {self.sentinel})

    def create(self, parent: str) -> None:
        self.api.create_tenant("T", slug(), parent_id=parent)

    def step(self) -> None:
        rng, api = self.rng, self.api
        inside = self.members()
        tenant = rng.choice(inside)
        key = rng.choice(["plan", "seats", "region", "beta"])
        action = rng.choice(
            ["put", "put", "lock", "delete", "permission", "unpermit", "move_out",
             "move_in", "archive", "restore", "batch", "outside"]
        )  # fmt: skip
        try:
            if action in ("put", "lock"):
                api.put_config(tenant, key, rng.randint(0, 99), locked=action == "lock")
            elif action == "delete":
                api.delete_config(tenant, key)
            elif action == "permission":
                api.put_permission(tenant, "billing", rng.random() < 0.5,
                                   mode=rng.choice(["INHERIT", "LOCAL", "LOCKED"]))  # fmt: skip
            elif action == "unpermit":
                api.delete_permission(tenant, "billing")
            elif action == "move_out" and tenant != self.root:
                api.move_tenant(tenant, self.outside)
            elif action == "move_in":
                away = [t["id"] for t in api.descendants(self.outside)]
                if away:
                    api.move_tenant(rng.choice(away), rng.choice(inside))
            elif action == "archive" and tenant != self.root:
                api.archive_tenant(tenant)
                self.archived.append(tenant)
            elif action == "restore" and self.archived:
                api.restore_tenant(self.archived.pop(rng.randrange(len(self.archived))))
            elif action == "batch":
                api.create_tenants([{"name": "B", "slug": slug(), "parent_id": tenant,
                                     "config": {"seats": rng.randint(1, 9)}}
                                    for _ in range(rng.randint(1, 3))])  # fmt: skip
            elif action == "outside":
                api.put_config(self.outside, key, rng.randint(0, 99))
        except ApiError as refused:
            # Refusals are part of the game (a lock below a lock, archiving a parent,
            # restoring under an archived parent); a refused write changes nothing.
            if refused.status not in (404, 409, 410):
                raise


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stream_fed_cache_equals_get_context(api: Client, seed: int) -> None:
    world = World(api, seed)
    changes: list[tuple[str, Any, Any]] = []
    cache = ContextCache(api, world.root, on_change=lambda *change: changes.append(change))
    with cache:
        assert_mirrors(api, cache, world.root)
        for round_ in range(3):
            for _ in range(15):
                world.step()
            settle(api, cache, world.sentinel, round_)
            assert_mirrors(api, cache, world.root)
        assert cache.connected
        assert cache.staleness < WAIT
    assert changes
    for tenant_id, old, new in changes:
        assert old != new
        assert (new or old)["tenant_id"] == tenant_id


def test_callback_and_read_your_writes(api: Client) -> None:
    root = api.create_tenant("Root", slug(), config={"plan": "free"})
    child = api.create_tenant("Child", slug(), parent_id=root["id"])
    seen: list[tuple[str, Any, Any]] = []
    with ContextCache(api, root["id"], on_change=lambda *c: seen.append(c)) as cache:
        before = cache.get(child["id"])
        assert before is not None
        assert before["resolved_config"]["plan"]["value"] == "free"
        api.put_config(root["id"], "plan", "pro", locked=True)
        meta = api.last_response
        assert meta is not None
        assert meta.revision is not None
        after = cache.get(child["id"], min_revision=meta.revision)
        assert after is not None
        assert after["resolved_config"]["plan"] == {
            "key": "plan", "value": "pro", "source_tenant_id": root["id"],
            "inherited": True, "locked": True,
        }  # fmt: skip
        assert cache.wait_for(root["id"], meta.revision, WAIT)
        assert cache.wait_for(child["id"], meta.revision, WAIT)
        assert cache.get(child["id"]) == after
        assert cache.revision >= meta.revision
    by_tenant = {tenant: (old, new) for tenant, old, new in seen}
    assert by_tenant[child["id"]] == (before, after)
    assert set(by_tenant) == {root["id"], child["id"]}


def test_scoped_key_caches_its_subtree(api: Client) -> None:
    root = api.create_tenant("Scoped", slug())
    child = api.create_tenant("Child", slug(), parent_id=root["id"])
    key = api.create_api_key("reader", tenant_id=root["id"], scopes=["read"])
    reader = Client(api.base_url, api_key=key["plaintext_key"])
    with ContextCache(reader, root["id"]) as cache:
        assert set(cache.tenant_ids()) == {root["id"], child["id"]}
        api.put_config(child["id"], "x", 1)
        meta = api.last_response
        assert meta is not None
        assert meta.revision is not None
        assert cache.wait_for(child["id"], meta.revision, WAIT)
        assert cache.value(child["id"], "x") == 1


def revision_of(api: Client) -> int:
    meta = api.last_response
    assert meta is not None
    assert meta.revision is not None
    return meta.revision


def test_outages_resume_and_a_reset_rehydrates(api: Client, live: LiveApp) -> None:  # noqa: F811
    """Through a proxy that is cut: a short outage resumes with Last-Event-ID (no reset);
    an outage past the kept log ends in `reset` and a rehydration that matches the
    service again."""
    root = api.create_tenant("Outage", slug())["id"]
    child = api.create_tenant("Child", slug(), parent_id=root)["id"]
    proxy = TcpProxy("127.0.0.1", int(live.base.rsplit(":", 1)[1]))
    live.run(proxy.start())
    through = Client(f"http://127.0.0.1:{proxy.port}", api_key=issue_key(live))
    cache = ContextCache(through, root, backoff_base=0.05, backoff_max=0.2)
    try:
        with cache:
            api.put_config(root, "a", 1)
            assert cache.wait_for(child, revision_of(api), WAIT)
            live.run(proxy.stop())
            api.put_config(child, "b", 2)
            missed = revision_of(api)
            live.run(proxy.start())
            assert cache.wait_for(child, missed, WAIT)
            assert cache.value(child, "b") == 2
            assert (cache.reconnects >= 1, cache.resets) == (True, 0)

            live.run(proxy.stop())
            api.put_config(child, "c", 3)
            api.put_config(root, "d", 4)
            newest = revision_of(api)
            live.fetch("UPDATE context_revisions SET committed_at = now() - interval '8 days'")
            api.purge_expired()
            live.run(proxy.start())
            assert cache.wait_for(child, newest, WAIT)
            assert cache.resets == 1
            assert_mirrors(api, cache, root)
    finally:
        live.run(proxy.stop())
        through.close()


def test_readme_use_it_from_your_app(
    live: LiveApp,  # noqa: F811
    api: Client,
) -> None:
    """The README's five lines, as pasted, with the reader's key and tenants."""
    from openfeature import api as openfeature_api

    text = (Path(__file__).parents[1] / "README.md").read_text()
    section = text[text.index("## Use it from your app") :]
    code = section[
        section.index("```python\n") + 10 : section.index("```\n", section.index("```python"))
    ]
    assert len([line for line in code.splitlines() if line.strip()]) == 5
    root = api.create_tenant("Readme", slug(), config={"plan": "pro"})
    child = api.create_tenant("Child", slug(), parent_id=root["id"])
    try:
        # The service logs to this process's stdout too: the snippet's print is caught.
        printed: list[object] = []
        names = {"URL": live.base, "ROOT_ID": root["id"], "TENANT_ID": child["id"],
                 "KEY": issue_key(live)}  # fmt: skip
        exec(code, {**names, "print": printed.append})  # noqa: S102
        assert printed == ["pro"]
    finally:
        openfeature_api.clear_providers()
