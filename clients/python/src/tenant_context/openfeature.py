"""An OpenFeature provider whose flags are the tenants' resolved config, read from a
`ContextCache` (memory only: an evaluation never makes a network call).

- flag key = config key; evaluation context `targeting_key` = tenant id;
- a permission reads as a boolean flag named `permission/<key>` (no config key holds a
  `/`), its `value` the policy's shown value;
- flag metadata: `source_tenant_id`, `inherited`, `locked` (permissions: `mode`,
  `delegated` too; a masked sensitive value: `masked_reason`);
- errors give the caller's default value with FLAG_NOT_FOUND (no such key for this
  tenant), TYPE_MISMATCH (the value is of another type), TARGETING_KEY_MISSING (no
  targeting key) or INVALID_CONTEXT (the tenant is not in the cached subtree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from openfeature.evaluation_context import EvaluationContext
from openfeature.event import ProviderEventDetails
from openfeature.exception import (
    FlagNotFoundError,
    InvalidContextError,
    TargetingKeyMissingError,
    TypeMismatchError,
)
from openfeature.flag_evaluation import (
    FlagEvaluationDetails,
    FlagResolutionDetails,
    FlagValueType,
    Reason,
)
from openfeature.hook import Hook
from openfeature.provider import AbstractProvider, Metadata

from tenant_context.cache import ContextCache
from tenant_context.client import Client
from tenant_context.models import TenantContext

PERMISSION_PREFIX = "permission/"
# The SDK asks for the metadata on every evaluation.
_METADATA = Metadata(name="tenant-context")
_CACHED = Reason.CACHED
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
Structure = Sequence[FlagValueType] | Mapping[str, FlagValueType]
FlagMeta = dict[str, bool | int | float | str]


class _Resolution(FlagResolutionDetails[T_co]):
    """FlagResolutionDetails built and turned into the SDK's FlagEvaluationDetails with
    positional arguments (the same fields and values: a test compares them with the SDK's
    own conversion). The dataclasses' keyword matching was a tenth of the provider's cost
    in an evaluation; positionally: value, error_code, error_message, reason, variant,
    flag_metadata."""

    def to_flag_evaluation_details(self, flag_key: str) -> FlagEvaluationDetails[T_co]:
        return FlagEvaluationDetails(
            flag_key, self.value, self.variant, self.flag_metadata, self.reason,
            self.error_code, self.error_message,
        )  # fmt: skip


class TenantContextProvider(AbstractProvider):
    """Tenant config as OpenFeature flags, from a ContextCache.

    >>> api.set_provider(TenantContextProvider(cache))
    >>> api.get_client().get_string_value("plan", "free", EvaluationContext(tenant_id))
    """

    def __init__(self, cache: ContextCache, *, owns_cache: bool = False) -> None:
        super().__init__()
        self.cache = cache
        self._owns_cache = owns_cache
        # None of its own; the SDK asks on every evaluation (one list, not a new one).
        self._hooks: list[Hook] = []
        # Every change the stream brings becomes PROVIDER_CONFIGURATION_CHANGED, naming
        # the flags (config keys, permission/<key>) that changed for that tenant; the
        # cache's own callback, if any, still runs first.
        self._app_callback = cache.on_change
        cache.on_change = self._changed

    @classmethod
    def connect(
        cls, base_url: str, root_tenant_id: str, *, api_key: str | None = None,
        token: str | None = None,
    ) -> TenantContextProvider:  # fmt: skip
        """A provider over a cache of its own, started by OpenFeature's `set_provider`."""
        client = Client(base_url, api_key=api_key, token=token)
        return cls(ContextCache(client, root_tenant_id), owns_cache=True)

    def get_metadata(self) -> Metadata:
        return _METADATA

    def get_provider_hooks(self) -> list[Hook]:
        return self._hooks

    def _changed(
        self, tenant_id: str, old: TenantContext | None, new: TenantContext | None
    ) -> None:
        if self._app_callback is not None:
            self._app_callback(tenant_id, old, new)
        flags = changed_flags(old, new)
        if flags:
            self.emit_provider_configuration_changed(
                ProviderEventDetails(flags_changed=flags, metadata={"tenant_id": tenant_id})
            )

    def initialize(self, evaluation_context: EvaluationContext) -> None:
        if self.cache._thread is None:
            self.cache.start()

    def shutdown(self) -> None:
        if self._owns_cache:
            self.cache.close()
            self.cache.client.close()

    # The five resolve_* methods each hold the common case inline: a present value of the
    # asked type (not masked), with no further call. An evaluation's cost is mostly the
    # SDK's own pipeline (docs/performance.md); this keeps the provider's share small.
    # Anything else (no targeting key, a tenant outside the subtree, a missing key, a
    # permission, a masked value, another type, an int asked as a float) goes through
    # _resolve, which raises the OpenFeature error or converts.

    def resolve_boolean_details(
        self,
        flag_key: str,
        default_value: bool,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[bool]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        config = self.cache._configs.get(tenant_id) if tenant_id else None
        entry = config.get(flag_key) if config is not None else None
        if entry is not None and type(entry["value"]) is bool and "masked_reason" not in entry:
            return _Resolution(entry["value"], None, None, _CACHED, None, {
                "source_tenant_id": entry["source_tenant_id"], "inherited": entry["inherited"],
                "locked": entry["locked"],
            })  # fmt: skip
        return self._resolve(flag_key, evaluation_context, bool, "boolean")

    def resolve_string_details(
        self, flag_key: str, default_value: str, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[str]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        config = self.cache._configs.get(tenant_id) if tenant_id else None
        entry = config.get(flag_key) if config is not None else None
        if entry is not None and type(entry["value"]) is str and "masked_reason" not in entry:
            return _Resolution(entry["value"], None, None, _CACHED, None, {
                "source_tenant_id": entry["source_tenant_id"], "inherited": entry["inherited"],
                "locked": entry["locked"],
            })  # fmt: skip
        return self._resolve(flag_key, evaluation_context, str, "string")

    def resolve_integer_details(
        self, flag_key: str, default_value: int, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[int]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        config = self.cache._configs.get(tenant_id) if tenant_id else None
        entry = config.get(flag_key) if config is not None else None
        if entry is not None and type(entry["value"]) is int and "masked_reason" not in entry:
            return _Resolution(entry["value"], None, None, _CACHED, None, {
                "source_tenant_id": entry["source_tenant_id"], "inherited": entry["inherited"],
                "locked": entry["locked"],
            })  # fmt: skip
        return self._resolve(flag_key, evaluation_context, int, "integer")

    def resolve_float_details(
        self,
        flag_key: str,
        default_value: float,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[float]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        config = self.cache._configs.get(tenant_id) if tenant_id else None
        entry = config.get(flag_key) if config is not None else None
        if entry is not None and type(entry["value"]) is float and "masked_reason" not in entry:
            return _Resolution(entry["value"], None, None, _CACHED, None, {
                "source_tenant_id": entry["source_tenant_id"], "inherited": entry["inherited"],
                "locked": entry["locked"],
            })  # fmt: skip
        return self._resolve(flag_key, evaluation_context, float, "float")

    def resolve_object_details(
        self,
        flag_key: str,
        default_value: Structure,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[Structure]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        config = self.cache._configs.get(tenant_id) if tenant_id else None
        entry = config.get(flag_key) if config is not None else None
        if entry is not None and type(entry["value"]) is dict and "masked_reason" not in entry:
            return _Resolution(entry["value"], None, None, _CACHED, None, {
                "source_tenant_id": entry["source_tenant_id"], "inherited": entry["inherited"],
                "locked": entry["locked"],
            })  # fmt: skip
        return self._resolve(flag_key, evaluation_context, dict, "object")

    def _resolve(
        self,
        flag_key: str,
        evaluation_context: EvaluationContext | None,
        kind: type[T],
        kind_name: str,
    ) -> FlagResolutionDetails[T]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        context = self.cache._contexts.get(tenant_id) if tenant_id else None
        if not tenant_id:
            raise TargetingKeyMissingError("the evaluation context needs a targeting key")
        if context is None:
            raise InvalidContextError(f"tenant {tenant_id} is not in the cached subtree")
        value, metadata = _lookup(context, flag_key)
        return _Resolution(
            value=_typed(flag_key, value, kind, kind_name), reason=_CACHED, flag_metadata=metadata
        )


def changed_flags(old: TenantContext | None, new: TenantContext | None) -> list[str]:
    """The flag keys whose value or metadata differ between two contexts of a tenant."""
    names: list[str] = []
    for part, prefix in (("resolved_config", ""), ("resolved_permissions", PERMISSION_PREFIX)):
        before: dict[str, Any] = dict(old[part]) if old else {}  # type: ignore[literal-required]
        after: dict[str, Any] = dict(new[part]) if new else {}  # type: ignore[literal-required]
        names += sorted(prefix + k for k in before.keys() | after.keys()
                        if before.get(k) != after.get(k))  # fmt: skip
    return names


def _lookup(context: TenantContext, flag_key: str) -> tuple[Any, FlagMeta]:
    if flag_key.startswith(PERMISSION_PREFIX):
        policy = context["resolved_permissions"].get(flag_key[len(PERMISSION_PREFIX) :])
        if policy is None:
            raise FlagNotFoundError(f"no permission {flag_key} for this tenant")
        return policy["value"], {
            "source_tenant_id": policy["source_tenant_id"],
            "inherited": policy["source_tenant_id"] != context["tenant_id"],
            "locked": policy["locked"],
            "mode": policy["mode"],
            "delegated": policy["delegated"],
        }
    entry = context["resolved_config"].get(flag_key)
    if entry is None:
        raise FlagNotFoundError(f"no config key {flag_key} for this tenant")
    metadata: FlagMeta = {
        "source_tenant_id": entry["source_tenant_id"],
        "inherited": entry["inherited"],
        "locked": entry["locked"],
    }
    masked = entry.get("masked_reason")
    if masked:
        metadata["masked_reason"] = masked
    return entry["value"], metadata


def _typed(flag_key: str, value: Any, kind: type[T], kind_name: str) -> T:
    # bool is an int in Python; OpenFeature keeps them apart.
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    ok = (
        isinstance(value, (dict, list))
        if kind is dict
        else isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
    )
    if not ok:
        raise TypeMismatchError(f"{flag_key} is a {type(value).__name__}, not a {kind_name}")
    return value  # type: ignore[no-any-return]
