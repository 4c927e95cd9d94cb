"""tenant_context.openfeature.TenantContextProvider on OpenFeature's own client, fed by
a ContextCache of the real service: values of every type, flag metadata (source tenant,
inherited, locked), permissions as `permission/<key>`, and the error codes with the
caller's default value."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import cast

import pytest
from openfeature import api as openfeature_api
from openfeature.client import OpenFeatureClient
from openfeature.evaluation_context import EvaluationContext
from openfeature.event import EventDetails, ProviderEvent
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import (
    FlagEvaluationDetails,
    FlagResolutionDetails,
    FlagValueType,
    Reason,
)
from openfeature.hook import Hook, HookContext, HookHints

from tenant_context import Client, ContextCache
from tenant_context.models import TenantContext
from tenant_context.openfeature import TenantContextProvider, changed_flags
from tests.support.client_service import issue_key, live  # noqa: F401 (fixture)
from tests.support.live_app import LiveApp

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
