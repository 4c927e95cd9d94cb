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
from dataclasses import FrozenInstanceError
from typing import Any, NoReturn, TypeVar

from openfeature.evaluation_context import EvaluationContext
from openfeature.event import ProviderEventDetails
from openfeature.exception import (
    ErrorCode,
    FlagNotFoundError,
    InvalidContextError,
    TargetingKeyMissingError,
    TypeMismatchError,
)
from openfeature.flag_evaluation import (
    FlagEvaluationDetails,
    FlagMetadata,
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
_STRUCTURES = (dict, list)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
Structure = Sequence[FlagValueType] | Mapping[str, FlagValueType]


class ReadOnlyMetadata(dict[str, bool | int | float | str]):
    """A flag's metadata: one per result, shared by every evaluation that returns it, so
    it refuses changes (TypeError). Still a dict (json.dumps, ==, isinstance); `dict(m)`
    or `m | other` make a copy of your own."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("flag metadata is shared and read-only; copy it with dict(...)")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __copy__(self) -> ReadOnlyMetadata:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> ReadOnlyMetadata:
        return self

    def __reduce__(self) -> tuple[type[ReadOnlyMetadata], tuple[dict[str, Any]]]:
        return ReadOnlyMetadata, (dict(self),)


_NO_METADATA = ReadOnlyMetadata()


class _Resolution(FlagResolutionDetails[T_co]):
    """A FlagResolutionDetails that is read-only (a stored result is returned to every
    evaluation of its flag and tenant: changing an attribute raises FrozenInstanceError)
    and turns into the SDK's FlagEvaluationDetails with positional arguments (the same
    fields and values: a test compares them with the SDK's own conversion; the
    dataclasses' keyword matching was a tenth of the provider's cost in an evaluation)."""

    def __init__(
        self,
        value: T_co,
        error_code: ErrorCode | None = None,
        error_message: str | None = None,
        reason: str | Reason | None = None,
        variant: str | None = None,
        flag_metadata: FlagMetadata = _NO_METADATA,
    ) -> None:
        # The dataclass's fields, in its order (dataclasses.replace works too).
        setter = object.__setattr__
        setter(self, "value", value)
        setter(self, "error_code", error_code)
        setter(self, "error_message", error_message)
        setter(self, "reason", reason)
        setter(self, "variant", variant)
        setter(self, "flag_metadata", flag_metadata)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise FrozenInstanceError(f"cannot assign to field {name!r}: a shared result")

    def __delattr__(self, name: str) -> NoReturn:
        raise FrozenInstanceError(f"cannot delete field {name!r}: a shared result")

    def to_flag_evaluation_details(self, flag_key: str) -> FlagEvaluationDetails[T_co]:
        # Positionally: flag_key, value, variant, flag_metadata, reason, error_code,
        # error_message.
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
        # The SDK looks up all five resolve methods (sync or async) on every evaluation, to
        # build a dict by flag type (openfeature/client.py, _create_provider_evaluation):
        # bound once here, as attributes, each look-up returns one of these rather than a
        # new method object (about 0.1 us an evaluation).
        for kind in ("boolean", "string", "integer", "float", "object"):
            for name in (f"resolve_{kind}_details", f"resolve_{kind}_details_async"):
                setattr(self, name, getattr(self, name))
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

    # Every answer a tenant's context gives is built once: the first evaluation of a flag
    # for a tenant goes through _resolve, which stores its (read-only) result with the
    # cache (ContextCache.keep: in the tenant's Derived, and by flag key, then tenant id);
    # later evaluations find it by flag key and tenant id and return it after checking its
    # value's type. A new context of the tenant drops what the old one gave, so results
    # live exactly as long as the context they were built from, and there is at most one
    # per config key or permission of a cached tenant: errors and converted values (an
    # integer asked as a float) are never stored.

    def resolve_boolean_details(
        self,
        flag_key: str,
        default_value: bool,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[bool]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        results = self.cache._derived_by_key.get(flag_key)
        result = results.get(tenant_id) if results is not None and tenant_id else None
        if result is not None and type(result.value) is bool:
            return result  # type: ignore[no-any-return]
        return self._resolve(flag_key, evaluation_context, bool, "boolean")

    def resolve_string_details(
        self, flag_key: str, default_value: str, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[str]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        results = self.cache._derived_by_key.get(flag_key)
        result = results.get(tenant_id) if results is not None and tenant_id else None
        if result is not None and type(result.value) is str:
            return result  # type: ignore[no-any-return]
        return self._resolve(flag_key, evaluation_context, str, "string")

    def resolve_integer_details(
        self, flag_key: str, default_value: int, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[int]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        results = self.cache._derived_by_key.get(flag_key)
        result = results.get(tenant_id) if results is not None and tenant_id else None
        if result is not None and type(result.value) is int:
            return result  # type: ignore[no-any-return]
        return self._resolve(flag_key, evaluation_context, int, "integer")

    def resolve_float_details(
        self,
        flag_key: str,
        default_value: float,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[float]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        results = self.cache._derived_by_key.get(flag_key)
        result = results.get(tenant_id) if results is not None and tenant_id else None
        if result is not None and type(result.value) is float:
            return result  # type: ignore[no-any-return]
        return self._resolve(flag_key, evaluation_context, float, "float")

    def resolve_object_details(
        self,
        flag_key: str,
        default_value: Structure,
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[Structure]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        results = self.cache._derived_by_key.get(flag_key)
        result = results.get(tenant_id) if results is not None and tenant_id else None
        if result is not None and type(result.value) in _STRUCTURES:
            return result  # type: ignore[no-any-return]
        return self._resolve(flag_key, evaluation_context, dict, "object")

    def _resolve(
        self,
        flag_key: str,
        evaluation_context: EvaluationContext | None,
        kind: type[T],
        kind_name: str,
    ) -> FlagResolutionDetails[T]:
        tenant_id = evaluation_context.targeting_key if evaluation_context else None
        if not tenant_id:
            raise TargetingKeyMissingError("the evaluation context needs a targeting key")
        derived = self.cache._derived.get(tenant_id)
        if derived is None:
            raise InvalidContextError(f"tenant {tenant_id} is not in the cached subtree")
        value, metadata = _lookup(derived.context, flag_key)
        typed = _typed(flag_key, value, kind, kind_name)
        if typed is not value:  # converted (an integer asked as a float): not stored
            return _Resolution(typed, None, None, _CACHED, None, metadata)
        # Stored: one metadata mapping per distinct metadata of the tenant's context
        # (most keys share a few sources), then the result.
        shared = derived.shared
        if shared is None:
            shared = derived.shared = {}
        metadata = shared.setdefault(tuple(metadata.items()), metadata)
        result = _Resolution(typed, None, None, _CACHED, None, metadata)
        self.cache.keep(derived, flag_key, result)
        return result


def changed_flags(old: TenantContext | None, new: TenantContext | None) -> list[str]:
    """The flag keys whose value or metadata differ between two contexts of a tenant."""
    names: list[str] = []
    for part, prefix in (("resolved_config", ""), ("resolved_permissions", PERMISSION_PREFIX)):
        before: dict[str, Any] = dict(old[part]) if old else {}  # type: ignore[literal-required]
        after: dict[str, Any] = dict(new[part]) if new else {}  # type: ignore[literal-required]
        names += sorted(prefix + k for k in before.keys() | after.keys()
                        if before.get(k) != after.get(k))  # fmt: skip
    return names


def _lookup(context: TenantContext, flag_key: str) -> tuple[Any, ReadOnlyMetadata]:
    if flag_key.startswith(PERMISSION_PREFIX):
        policy = context["resolved_permissions"].get(flag_key[len(PERMISSION_PREFIX) :])
        if policy is None:
            raise FlagNotFoundError(f"no permission {flag_key} for this tenant")
        return policy["value"], ReadOnlyMetadata(
            source_tenant_id=policy["source_tenant_id"],
            inherited=policy["source_tenant_id"] != context["tenant_id"],
            locked=policy["locked"],
            mode=policy["mode"],
            delegated=policy["delegated"],
        )
    entry = context["resolved_config"].get(flag_key)
    if entry is None:
        raise FlagNotFoundError(f"no config key {flag_key} for this tenant")
    masked = entry.get("masked_reason")
    if masked:
        return entry["value"], ReadOnlyMetadata(
            source_tenant_id=entry["source_tenant_id"], inherited=entry["inherited"],
            locked=entry["locked"], masked_reason=masked,
        )  # fmt: skip
    return entry["value"], ReadOnlyMetadata(
        source_tenant_id=entry["source_tenant_id"], inherited=entry["inherited"],
        locked=entry["locked"],
    )  # fmt: skip


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
