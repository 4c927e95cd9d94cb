"""ContextCache's side of the stream protocol, on scripted answers (httpx.MockTransport):
the position it asks from (since=, then Last-Event-ID), resuming after a dropped
connection, rehydrating on `reset`, honouring a 429's Retry-After, and read-your-writes
falling back to a read with the consistency token. The same cache against the real
service: tests/test_client_cache.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tenant_context import Client, ContextCache
from tenant_context.sse import Event

WAIT = 5.0


def context(tenant_id: str, **config: Any) -> dict[str, Any]:
    return {
        "tenant_id": tenant_id, "ancestry_path": f"/{tenant_id}", "depth": 0,
        "isolation_strategy": "SHARED_RLS", "resolved_permissions": {},
        "resolved_config": {
            k: {"key": k, "value": v, "source_tenant_id": tenant_id, "inherited": False,
                "locked": False}
            for k, v in config.items()
        },
    }  # fmt: skip


def sse(event: str, event_id: str, data: dict[str, Any]) -> bytes:
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(data)}\n\n".encode()


class Scripted:
    """Answers hydrations and stream connections from scripts; once a script runs out,
    a stream stays open (idle) until the test ends."""

    def __init__(self) -> None:
        self.hydrations: list[tuple[int, list[dict[str, Any]]]] = []
        self.streams: list[httpx.Response | list[bytes]] = []
        self.requests: list[httpx.Request] = []
        self.seen = threading.Condition()
        self.done = threading.Event()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self.seen:
            self.requests.append(request)
            self.seen.notify_all()
        if request.url.path.endswith("/contexts"):
            revision, contexts = self.hydrations.pop(0)
            return httpx.Response(200, json=contexts, headers={"X-Revision": str(revision)})
        if request.url.path.endswith("/context"):
            tenant = request.url.path.split("/")[-2]
            return httpx.Response(200, json=context(tenant, plan="read-through"))
        script = self.streams.pop(0) if self.streams else []
        if isinstance(script, httpx.Response):
            return script
        return httpx.Response(
            200, headers={"Content-Type": "text/event-stream"},
            stream=_Stream(script, self.done),
        )  # fmt: skip

    def stream_requests(self, count: int) -> list[httpx.Request]:
        with self.seen:
            assert self.seen.wait_for(
                lambda: len([r for r in self.requests if "context-changes" in r.url.path]) >= count,
                WAIT,
            )
            return [r for r in self.requests if "context-changes" in r.url.path]


class _Stream(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes], done: threading.Event) -> None:
        self.chunks = chunks
        self.done = done
        self.idle = not chunks
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        while self.idle and not self.done.is_set() and not self.closed.wait(0.01):
            pass

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    script = Scripted()
    yield script
    script.done.set()


def make_cache(scripted: Scripted, changes: list[tuple[str, Any, Any]]) -> ContextCache:
    http = httpx.Client(transport=httpx.MockTransport(scripted))
    client = Client("http://service.test", api_key="k", http=http)
    return ContextCache(
        client, "root", backoff_base=0.01, backoff_max=0.05, wait_timeout=0.2,
        on_change=lambda tenant, old, new: changes.append((tenant, old, new)),
    )  # fmt: skip


def assert_derived_follow(cache: ContextCache) -> None:
    # The OpenFeature provider keeps its results in each tenant's Derived, which must
    # belong to the tenant's current context.
    contexts = cache.snapshot()
    assert cache._derived.keys() == contexts.keys()
    assert all(cache._derived[tenant].context is contexts[tenant] for tenant in contexts)
    # The index by key holds only what the tenants' current Derived hold.
    for key, by_tenant in cache._derived_by_key.items():
        for tenant, value in by_tenant.items():
            assert cache._derived[tenant][key] is value


def test_resumes_from_the_last_event_id(scripted: Scripted) -> None:
    a, b = context("a", plan="free"), context("b", plan="pro")
    a2 = context("a", plan="pro")
    scripted.hydrations.append((5, [a, b]))
    scripted.streams.append(
        [b": hi\n\n", sse("context", "6:0", {"revision": 6, "tenant_id": "a", "context": a2})]
    )
    scripted.streams.append(
        [sse("removed", "7:0", {"revision": 7, "tenant_id": "b", "reason": "moved"})]
    )
    changes: list[tuple[str, Any, Any]] = []
    with make_cache(scripted, changes) as cache:
        assert cache.wait_for_revision(7, WAIT)
        first, second, third = scripted.stream_requests(3)[:3]
        assert first.url.params["since"] == "5"
        assert "Last-Event-ID" not in first.headers
        assert second.headers["Last-Event-ID"] == "6:0"
        assert third.headers["Last-Event-ID"] == "7:0"
        assert first.headers["X-API-Key"] == "k"
        assert cache.get("a") == a2
        assert cache.get("b") is None
        assert cache.revision == 7
        assert cache.value("a", "plan") == "pro"
        assert cache.staleness < WAIT
        assert_derived_follow(cache)
    assert changes == [("a", a, a2), ("b", b, None)]


def test_reset_rehydrates_and_follows_from_the_new_revision(scripted: Scripted) -> None:
    a, b, c = context("a", plan="free"), context("b"), context("c")
    a2 = context("a", plan="enterprise")
    scripted.hydrations += [(3, [a, b]), (40, [a2, c])]
    scripted.streams.append([sse("reset", "9:0", {"revision": 30})])
    changes: list[tuple[str, Any, Any]] = []
    with make_cache(scripted, changes) as cache:
        first, second = scripted.stream_requests(2)[:2]
        assert cache.revision == 40
        assert first.url.params["since"] == "3"
        assert second.url.params["since"] == "40"
        assert "Last-Event-ID" not in second.headers
        assert cache.snapshot() == {"a": a2, "c": c}
        assert cache.resets == 1
        assert_derived_follow(cache)
    assert sorted(changes, key=lambda change: change[0]) == [
        ("a", a, a2), ("b", b, None), ("c", None, c),
    ]  # fmt: skip


def test_refused_stream_waits_retry_after_then_resumes(scripted: Scripted) -> None:
    scripted.hydrations.append((1, [context("a")]))
    refusal = {"error": {"code": "RATE_LIMITED", "message": "slow down"}}
    scripted.streams.append(httpx.Response(429, json=refusal, headers={"Retry-After": "0"}))
    a2 = context("a", plan="pro")
    scripted.streams.append(
        [sse("context", "2:0", {"revision": 2, "tenant_id": "a", "context": a2})]
    )
    with make_cache(scripted, []) as cache:
        assert cache.wait_for_revision(2, WAIT)
        assert cache.get("a") == a2
        assert cache.reconnects >= 1
        assert cache.last_error is not None
        assert getattr(cache.last_error, "code", None) == "RATE_LIMITED"


def test_min_revision_reads_through_with_the_consistency_token(scripted: Scripted) -> None:
    a = context("a", plan="cached")
    scripted.hydrations.append((10, [a]))
    with make_cache(scripted, []) as cache:
        assert cache.get("a", min_revision=10) == a  # reached: from memory
        answer = cache.get("a", min_revision=11, consistency_token="tok-1")
        assert answer is not None
        assert answer["resolved_config"]["plan"]["value"] == "read-through"
        read = [r for r in scripted.requests if r.url.path.endswith("/a/context")]
        assert [r.headers["X-Consistency-Token"] for r in read] == ["tok-1"]
        assert cache.get("a") == a  # a read-through never overwrites the stream's copy


def test_kept_values_never_outlive_their_context(scripted: Scripted) -> None:
    # ContextCache.keep takes no lock: a value derived from a context that is replaced
    # before (or while) it is stored must not stay in the index, whichever comes first.
    scripted.hydrations.append((1, [context("a", plan="free")]))

    def change(revision: int, plan: str) -> None:
        data = {"revision": revision, "tenant_id": "a", "context": context("a", plan=plan)}
        cache._apply([Event("context", json.dumps(data), f"{revision}:0")])

    with make_cache(scripted, []) as cache:
        first = cache._derived["a"]
        cache.keep(first, "plan", "free")
        assert cache._derived_by_key["plan"]["a"] == "free"
        change(2, "pro")  # stored, then replaced: dropped with the old Derived
        assert "a" not in cache._derived_by_key["plan"]
        cache.keep(first, "plan", "free")  # taken before the change, stored after it
        assert "a" not in cache._derived_by_key["plan"]
        cache.keep(cache._derived["a"], "plan", "pro")
        assert cache._derived_by_key["plan"]["a"] == "pro"
        cache._apply([Event("removed", json.dumps({"revision": 3, "tenant_id": "a"}), "3:0")])
        assert cache._derived_by_key["plan"] == {}
        assert_derived_follow(cache)
