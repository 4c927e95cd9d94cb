"""tenant_context.openfeature.TenantContextProvider on OpenFeature's own client, fed by
a ContextCache of the real service: values of every type, flag metadata (source tenant,
inherited, locked), permissions as `permission/<key>`, and the error codes with the
caller's default value. On a scripted stream (no service): results built once per
tenant's context, read-only, and an evaluated flag after its tenant's context changed."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import threading
import uuid
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from openfeature import api as openfeature_api
from openfeature.client import OpenFeatureClient
from openfeature.evaluation_context import EvaluationContext
from openfeature.event import EventDetails, ProviderEvent
from openfeature.exception import ErrorCode, FlagNotFoundError, TypeMismatchError
from openfeature.flag_evaluation import (
    FlagEvaluationDetails,
    FlagResolutionDetails,
    FlagValueType,
    Reason,
)
from openfeature.hook import Hook, HookContext, HookHints
from openfeature.provider.no_op_provider import NoOpProvider

from tenant_context import Client, ContextCache
from tenant_context.models import TenantContext
from tenant_context.openfeature import ReadOnlyMetadata, TenantContextProvider, changed_flags
from tests.support.client_service import issue_key, live  # noqa: F401 (fixture)
from tests.support.live_app import LiveApp
from tests.test_client_cache_protocol import WAIT, Scripted, context, make_cache, sse

DOMAIN = "tenant-context-tests"


def slug() -> str:
    return "f" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def api(live: LiveApp) -> Client:  # noqa: F811
    return Client(live.base, api_key=issue_key(live))


@pytest.fixture(scope="module")
def tree(api: Client) -> dict[str, str]:
    root = api.create_tenant("Root", slug(), config={"plan": "pro", "seats": 5, "ratio": 0.5})
    api.put_config(root["id"], "beta", True, locked=True)
    api.put_config(root["id"], "limits", {"rps": 10, "regions": ["eu"]})
    child = api.create_tenant("Child", slug(), parent_id=root["id"], config={"seats": 9})
    api.put_permission(root["id"], "billing.write", True, mode="LOCKED")
    return {"root": root["id"], "child": child["id"]}


@pytest.fixture(scope="module")
def provider(api: Client, tree: dict[str, str]) -> Iterator[TenantContextProvider]:
    provider = TenantContextProvider(ContextCache(api, tree["root"]))
    openfeature_api.set_provider_and_wait(provider, domain=DOMAIN)  # starts the cache
    try:
        yield provider
    finally:
        openfeature_api.clear_providers()
        provider.cache.close()


@pytest.fixture(scope="module")
def flags(provider: TenantContextProvider) -> OpenFeatureClient:
    return openfeature_api.get_client(DOMAIN)


def of(tenant_id: str) -> EvaluationContext:
    return EvaluationContext(targeting_key=tenant_id)


def test_values_and_metadata(flags: OpenFeatureClient, tree: dict[str, str]) -> None:
    child = of(tree["child"])
    plan = flags.get_string_details("plan", "free", child)
    assert (plan.value, plan.reason, plan.error_code) == ("pro", Reason.CACHED, None)
    assert plan.flag_metadata == {
        "source_tenant_id": tree["root"], "inherited": True, "locked": False,
    }  # fmt: skip
    seats = flags.get_integer_details("seats", 0, child)
    assert seats.value == 9
    assert seats.flag_metadata == {
        "source_tenant_id": tree["child"], "inherited": False, "locked": False,
    }  # fmt: skip
    assert flags.get_float_value("ratio", 0.0, child) == 0.5
    assert flags.get_float_value("seats", 0.0, child) == 9.0
    beta = flags.get_boolean_details("beta", False, child)
    assert beta.value is True
    assert beta.flag_metadata["locked"] is True
    assert flags.get_object_value("limits", {}, child) == {"rps": 10, "regions": ["eu"]}
    billing = flags.get_boolean_details("permission/billing.write", False, child)
    assert billing.value is True
    assert billing.flag_metadata == {
        "source_tenant_id": tree["root"], "inherited": True, "locked": True,
        "mode": "LOCKED", "delegated": False,
    }  # fmt: skip


def test_error_codes_give_the_default(flags: OpenFeatureClient, tree: dict[str, str]) -> None:
    child = of(tree["child"])
    missing = flags.get_string_details("no_such_key", "fallback", child)
    assert (missing.value, missing.error_code) == ("fallback", ErrorCode.FLAG_NOT_FOUND)
    assert missing.reason == Reason.ERROR
    wrong = flags.get_boolean_details("plan", False, child)
    assert (wrong.value, wrong.error_code) == (False, ErrorCode.TYPE_MISMATCH)
    not_int = flags.get_integer_details("beta", 7, child)  # a bool is no integer
    assert (not_int.value, not_int.error_code) == (7, ErrorCode.TYPE_MISMATCH)
    anonymous = flags.get_string_details("plan", "free", EvaluationContext())
    assert (anonymous.value, anonymous.error_code) == ("free", ErrorCode.TARGETING_KEY_MISSING)
    stranger = flags.get_string_details("plan", "free", of(str(uuid.uuid4())))
    assert (stranger.value, stranger.error_code) == ("free", ErrorCode.INVALID_CONTEXT)
    no_policy = flags.get_boolean_details("permission/nope", False, child)
    assert (no_policy.value, no_policy.error_code) == (False, ErrorCode.FLAG_NOT_FOUND)


def test_resolutions_convert_as_the_sdk_converts(
    provider: TenantContextProvider, tree: dict[str, str]
) -> None:
    # The provider builds its results positionally (docs/performance.md): the fields must
    # be the ones the keywords would set, and the conversion the SDK's own.
    child = of(tree["child"])
    resolutions: list[FlagResolutionDetails[object]] = [
        provider.resolve_string_details("plan", "free", child),
        provider.resolve_integer_details("seats", 0, child),
        provider.resolve_float_details("seats", 0.0, child),  # through _resolve
        provider.resolve_boolean_details("beta", False, child),
        provider.resolve_object_details("limits", {}, child),
        provider.resolve_boolean_details("permission/billing.write", False, child),
    ]
    expected = [
        ("pro", False), (9, False), (9.0, False), (True, True), (None, False), (True, True),
    ]  # fmt: skip
    for resolution, (value, locked) in zip(resolutions, expected, strict=True):
        assert isinstance(resolution, FlagResolutionDetails)
        assert (resolution.error_code, resolution.error_message) == (None, None)
        assert (resolution.reason, resolution.variant) == (Reason.CACHED, None)
        if value is not None:
            assert resolution.value == value
            assert type(resolution.value) is type(value)
        assert resolution.flag_metadata["locked"] is locked
        sdk = FlagResolutionDetails.to_flag_evaluation_details(resolution, "k")
        ours = resolution.to_flag_evaluation_details("k")
        assert type(ours) is FlagEvaluationDetails
        assert vars(ours) == vars(sdk)


class Recorder(Hook):
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def before(self, hook_context: HookContext, hints: HookHints) -> EvaluationContext | None:
        self.calls.append(("before", hook_context.flag_key))
        return None

    def after(
        self,
        hook_context: HookContext,
        details: FlagEvaluationDetails[FlagValueType],
        hints: HookHints,
    ) -> None:
        self.calls.append(("after", repr(details.value)))

    def error(self, hook_context: HookContext, exception: Exception, hints: HookHints) -> None:
        self.calls.append(("error", type(exception).__name__))

    def finally_after(
        self,
        hook_context: HookContext,
        details: FlagEvaluationDetails[FlagValueType],
        hints: HookHints,
    ) -> None:
        self.calls.append(("finally", str(details.error_code)))


def test_hooks_a_user_adds_still_run(provider: TenantContextProvider, tree: dict[str, str]) -> None:
    assert provider.get_provider_hooks() == []
    hook = Recorder()
    flags = openfeature_api.get_client(DOMAIN)
    flags.add_hooks([hook])
    assert flags.get_string_value("plan", "free", of(tree["child"])) == "pro"
    assert hook.calls == [("before", "plan"), ("after", "'pro'"), ("finally", "None")]
    hook.calls.clear()
    assert flags.get_string_value("no_such_key", "free", of(tree["child"])) == "free"
    assert hook.calls == [
        ("before", "no_such_key"), ("error", "FlagNotFoundError"),
        ("finally", "FLAG_NOT_FOUND"),
    ]  # fmt: skip


def test_a_change_reaches_the_evaluation(
    api: Client, provider: TenantContextProvider, flags: OpenFeatureClient, tree: dict[str, str]
) -> None:
    announced: list[EventDetails] = []
    both = threading.Event()

    def changed(details: EventDetails) -> None:
        announced.append(details)
        tenants = {
            d.metadata.get("tenant_id") for d in announced if "plan" in (d.flags_changed or [])
        }
        if tenants >= {tree["root"], tree["child"]}:
            both.set()

    flags.add_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, changed)
    try:
        api.put_config(tree["root"], "plan", "enterprise")
        meta = api.last_response
        assert meta is not None
        assert meta.revision is not None
        assert provider.cache.wait_for(tree["child"], meta.revision, 10.0)
        assert flags.get_string_value("plan", "free", of(tree["child"])) == "enterprise"
        assert both.wait(10.0), announced
    finally:
        flags.remove_handler(ProviderEvent.PROVIDER_CONFIGURATION_CHANGED, changed)
    child_event = next(d for d in announced if d.metadata.get("tenant_id") == tree["child"])
    assert child_event.flags_changed == ["plan"]
    assert child_event.provider_name == "tenant-context"


def test_changed_flags() -> None:
    def ctx(config: dict[str, object], permissions: dict[str, object]) -> TenantContext:
        return cast(TenantContext, {"resolved_config": config, "resolved_permissions": permissions})

    old = ctx({"a": {"value": 1}, "b": {"value": 2}}, {"p": {"value": True}})
    new = ctx({"a": {"value": 1}, "c": {"value": 3}}, {"p": {"value": False}})
    assert changed_flags(old, new) == ["b", "c", "permission/p"]
    assert changed_flags(None, new) == ["a", "c", "permission/p"]
    assert changed_flags(old, None) == ["a", "b", "permission/p"]


def test_an_evaluated_flag_follows_its_tenants_changes(
    api: Client, provider: TenantContextProvider, flags: OpenFeatureClient, tree: dict[str, str]
) -> None:
    # Evaluated (and so stored) first, then changed: the next evaluation reads the new
    # value and metadata.
    child = of(tree["child"])
    api.put_config(tree["root"], "tier", "silver")
    assert provider.cache.wait_for(tree["child"], revision_of(api), 10.0)
    first = flags.get_string_details("tier", "none", child)
    assert (first.value, dict(first.flag_metadata)) == ("silver", {
        "source_tenant_id": tree["root"], "inherited": True, "locked": False,
    })  # fmt: skip
    assert flags.get_string_details("tier", "none", child) == first
    api.put_config(tree["child"], "tier", "gold")
    assert provider.cache.wait_for(tree["child"], revision_of(api), 10.0)
    again = flags.get_string_details("tier", "none", child)
    assert (again.value, dict(again.flag_metadata)) == ("gold", {
        "source_tenant_id": tree["child"], "inherited": False, "locked": False,
    })  # fmt: skip
    assert flags.get_string_value("tier", "none", of(tree["root"])) == "silver"


def revision_of(api: Client) -> int:
    meta = api.last_response
    assert meta is not None
    assert meta.revision is not None
    return meta.revision


# On a scripted stream (tests/test_client_cache_protocol.py's Scripted): no service.


class _Gated(httpx.SyncByteStream):
    """A change stream that sends each chunk once its gate opens, then stays open."""

    def __init__(self, steps: list[tuple[threading.Event, bytes]]) -> None:
        self.steps = steps
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        yield b": connected\n\n"
        for gate, chunk in self.steps:
            while not gate.wait(0.01):
                if self.closed.is_set():
                    return
            yield chunk
        while not self.closed.wait(0.01):
            pass

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    script = Scripted()
    yield script
    script.done.set()


def scripted_flags(cache: ContextCache, domain: str) -> OpenFeatureClient:
    openfeature_api.set_provider_and_wait(TenantContextProvider(cache), domain=domain)
    return openfeature_api.get_client(domain)


def test_a_change_replaces_the_stored_results(scripted: Scripted) -> None:
    a = context("a", plan="free", seats=3)
    a2 = context("a", plan="pro", seats=3)
    a2["resolved_config"]["plan"].update(source_tenant_id="root", inherited=True, locked=True)
    a3, b = context("a", plan="enterprise"), context("b", plan="free")
    changed, reset = threading.Event(), threading.Event()
    scripted.hydrations += [(1, [a]), (9, [b])]
    steps = [
        (changed, sse("context", "2:0", {"revision": 2, "tenant_id": "a", "context": a2})),
        (reset, sse("context", "3:0", {"revision": 3, "tenant_id": "a", "context": a3})
         + sse("reset", "4:0", {"revision": 8})),
    ]  # fmt: skip
    headers = {"Content-Type": "text/event-stream"}
    scripted.streams.append(httpx.Response(200, headers=headers, stream=_Gated(steps)))
    domain = f"scripted-{uuid.uuid4().hex[:8]}"
    with make_cache(scripted, []) as cache:
        flags = scripted_flags(cache, domain)
        try:
            before = flags.get_string_details("plan", "x", of("a"))
            assert (before.value, before.error_code) == ("free", None)
            assert before.flag_metadata == {
                "source_tenant_id": "a", "inherited": False, "locked": False,
            }  # fmt: skip
            assert flags.get_integer_value("seats", 0, of("a")) == 3
            stored = cache._derived["a"]
            assert set(stored) == {"plan", "seats"}
            changed.set()
            assert cache.wait_for("a", 2, WAIT)
            after = flags.get_string_details("plan", "x", of("a"))
            assert (after.value, after.error_code) == ("pro", None)
            assert after.flag_metadata == {
                "source_tenant_id": "root", "inherited": True, "locked": True,
            }  # fmt: skip
            assert flags.get_integer_value("seats", 0, of("a")) == 3
            assert cache._derived["a"] is not stored
            assert stored["plan"].value == "free"  # the old one, read by no one now
            assert cache._derived_by_key["plan"]["a"] is cache._derived["a"]["plan"]
            assert cache._derived_by_key["plan"]["a"].value == "pro"
            reset.set()
            assert cache.wait_for_revision(9, WAIT)
            assert cache._derived_by_key == {}
            gone = flags.get_string_details("plan", "x", of("a"))  # left on rehydration
            assert (gone.value, gone.error_code) == ("x", ErrorCode.INVALID_CONTEXT)
            assert flags.get_string_value("plan", "x", of("b")) == "free"
        finally:
            openfeature_api.set_provider(NoOpProvider(), domain=domain)


def test_results_are_built_once_and_read_only(scripted: Scripted) -> None:
    a = context("a", plan="pro", seats=9, ratio=0.5, beta=True, limits={"rps": 10}, tags=["x"])
    scripted.hydrations.append((1, [a]))
    with make_cache(scripted, []) as cache:
        provider = TenantContextProvider(cache)
        of_a = of("a")
        plan = provider.resolve_string_details("plan", "free", of_a)
        assert provider.resolve_string_details("plan", "free", of_a) is plan
        assert provider.resolve_object_details("tags", [], of_a).value == ["x"]
        assert provider.resolve_object_details("limits", {}, of_a).value == {"rps": 10}
        assert provider.resolve_boolean_details("beta", False, of_a).value is True
        assert provider.resolve_float_details("ratio", 0.0, of_a).value == 0.5
        # Converted (an integer asked as a float) and failed evaluations store nothing:
        # at most one result per key of the context.
        assert provider.resolve_float_details("seats", 0.0, of_a).value == 9.0
        with pytest.raises(TypeMismatchError):
            provider.resolve_boolean_details("plan", False, of_a)
        with pytest.raises(FlagNotFoundError):
            provider.resolve_string_details("no_such_key", "free", of_a)
        assert set(cache._derived["a"]) == {"plan", "tags", "limits", "beta", "ratio"}
        assert set(cache._derived_by_key) == {"plan", "tags", "limits", "beta", "ratio"}
        seats = provider.resolve_integer_details("seats", 0, of_a)
        assert type(seats.value) is int
        assert type(provider.resolve_float_details("seats", 0.0, of_a).value) is float
        assert provider.resolve_integer_details("seats", 0, of_a) is seats
        assert seats.flag_metadata is plan.flag_metadata  # equal metadata, stored once
        with pytest.raises(TypeMismatchError):
            provider.resolve_string_details("seats", "free", of_a)  # stored as an int
        # Shared, so read-only: the result and its metadata.
        with pytest.raises(dataclasses.FrozenInstanceError):
            plan.value = "free"
        assert dataclasses.replace(plan, value="other").value == "other"
        metadata = plan.flag_metadata
        assert isinstance(metadata, ReadOnlyMetadata)
        for change in (
            lambda m: m.__setitem__("locked", True), lambda m: m.update(locked=True),
            lambda m: m.pop("locked"), lambda m: m.clear(), lambda m: m.__ior__({}),
            lambda m: m.__delitem__("locked"), lambda m: m.setdefault("x", 1),
            lambda m: m.popitem(),
        ):  # fmt: skip
            with pytest.raises(TypeError):
                change(metadata)
        expected: dict[str, Any] = {"source_tenant_id": "a", "inherited": False, "locked": False}
        assert metadata == expected
        assert json.loads(json.dumps(metadata)) == expected
        assert copy.deepcopy(metadata) == expected
        assert pickle.loads(pickle.dumps(metadata)) == expected  # noqa: S301 (our own bytes)
        mine = dict(metadata) | {"seen": True}
        assert mine == {**expected, "seen": True}
        assert plan.to_flag_evaluation_details("plan").flag_metadata is metadata
