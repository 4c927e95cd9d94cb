"""Every resolved context of a subtree in memory, kept current by the change stream.

One background thread per cache follows `GET /tenants/{id}/context-changes`; readers
never wait on it: `get` is a dictionary lookup (the stored dict itself: do not change
it). The thread reconnects with backoff and Last-Event-ID, and rehydrates on `reset`.
Works the same from threads and from asyncio code (nothing blocks but `min_revision`
reads, which wait at most `wait_timeout`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import httpx

from tenant_context._core import CONSISTENCY_TOKEN, error_of, parse_retry_after
from tenant_context.client import Client
from tenant_context.errors import ApiError, NotFoundError
from tenant_context.models import TenantContext
from tenant_context.sse import Event, Parser

log = logging.getLogger("tenant_context.cache")

# (tenant_id, old context or None, new context or None when it left the subtree)
ChangeCallback = Callable[[str, TenantContext | None, TenantContext | None], None]


class Derived(dict[str, Any]):
    """What readers derived from one context of one tenant (the OpenFeature provider's
    prebuilt results), by key (a flag key). Readers store through `ContextCache.keep`,
    which also indexes each value by key, then tenant, for look-ups that start from the
    key; `shared` (None until a reader sets it) holds what the values share (the
    provider's flag metadata, one per distinct value).

    The cache gives every new context of a tenant a new, empty Derived and drops what the
    old one held from the index (all of it on a rehydration), so nothing derived from an
    old context is read again, and what is kept is bounded by the cached contexts.
    """

    __slots__ = ("context", "shared")

    def __init__(self, context: TenantContext) -> None:
        super().__init__()
        self.context = context
        self.shared: dict[Any, Any] | None = None


class ContextCache:
    """The contexts of `root_tenant_id`'s subtree, fed by the service's change stream.

    >>> cache = ContextCache(client, root_id).start()
    >>> cache.get(tenant_id)["resolved_config"]["plan"]["value"]
    """

    def __init__(
        self,
        client: Client,
        root_tenant_id: str,
        *,
        on_change: ChangeCallback | None = None,
        wait_timeout: float = 1.0,
        read_timeout: float = 60.0,
        backoff_base: float = 0.1,
        backoff_max: float = 5.0,
    ) -> None:
        self.client = client
        self.root_tenant_id = root_tenant_id
        self.on_change = on_change
        self.wait_timeout = wait_timeout
        self.read_timeout = read_timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._contexts: dict[str, TenantContext] = {}
        # Beside _contexts, replaced with it (under the lock): one Derived per tenant, which
        # holds its context and what readers derived from it; and the same values by key,
        # then tenant id (the OpenFeature provider's look-up: a flag's dict is hot, and it
        # reaches a result through fewer objects than tenant first, then key).
        self._derived: dict[str, Derived] = {}
        self._derived_by_key: dict[str, dict[str, Any]] = {}
        self._revisions: dict[str, int] = {}
        self._revision = 0
        # Every revision up to this one is applied whole (an event of a later revision
        # came, or the hydration reflected it).
        self._complete = 0
        self._last_event_id: str | None = None
        self._hydrated_revision = 0
        self._last_activity = time.monotonic()
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: httpx.Response | None = None
        self.connected = False
        self.reconnects = 0
        self.resets = 0
        self.last_error: BaseException | None = None

    # Life cycle

    def start(self) -> ContextCache:
        """Hydrate (in the caller's thread: errors raise here), then follow the stream."""
        self._hydrate()
        self._thread = threading.Thread(
            target=self._follow, name=f"tenant-context-{self.root_tenant_id}", daemon=True
        )
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        response = self._response
        if response is not None:
            _interrupt(response)
        if self._thread is not None:
            self._thread.join(timeout)
        with self._changed:
            self._changed.notify_all()

    def __enter__(self) -> ContextCache:
        return self.start() if self._thread is None else self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # Reads

    @property
    def revision(self) -> int:
        """The latest revision applied to this cache."""
        return self._revision

    @property
    def staleness(self) -> float:
        """Seconds since the stream last said anything (an event or a heartbeat)."""
        return time.monotonic() - self._last_activity

    def __len__(self) -> int:
        return len(self._contexts)

    def __contains__(self, tenant_id: object) -> bool:
        return tenant_id in self._contexts

    def tenant_ids(self) -> list[str]:
        return list(self._contexts)

    def snapshot(self) -> dict[str, TenantContext]:
        return dict(self._contexts)

    def get(
        self,
        tenant_id: str,
        min_revision: int | None = None,
        *,
        consistency_token: str | None = None,
    ) -> TenantContext | None:
        """The tenant's context from memory (None outside the subtree).

        With `min_revision` (the X-Revision of a write the caller made), waits at most
        `wait_timeout` for the stream to reach it; else reads `GET /context` with the
        consistency token (given, or the client's latest write), so the answer always
        includes that write.
        """
        if min_revision is None or self._reached(tenant_id, min_revision):
            return self._contexts.get(tenant_id)
        if self.wait_for(tenant_id, min_revision, self.wait_timeout):
            return self._contexts.get(tenant_id)
        token = consistency_token or self.client.consistency_token
        try:
            if token is not None:
                return self.client.get_context(tenant_id, consistency_token=token)
            return self.client.get_context(tenant_id)
        except NotFoundError:
            return None

    def value(self, tenant_id: str, key: str, default: Any = None) -> Any:
        """One config value of the tenant (default when absent)."""
        context = self._contexts.get(tenant_id)
        if context is None:
            return default
        entry = context["resolved_config"].get(key)
        return default if entry is None else entry["value"]

    def wait_for_revision(self, revision: int, timeout: float) -> bool:
        """Whether events of `revision` (or later) reached the cache within `timeout`.
        Events arrive in revision order and the service writes a revision's events
        together, but a revision over many tenants may still be arriving: `wait_for`
        is exact for one tenant."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._revision < revision:
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return False
                self._changed.wait(left)
        return True

    def wait_for(self, tenant_id: str, revision: int, timeout: float) -> bool:
        """Whether the tenant's cached context reflects `revision` or later (its own
        event of that revision or later arrived, or a later revision did) in `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self._reached(tenant_id, revision):
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return False
                self._changed.wait(left)
        return True

    def keep(self, derived: Derived, key: str, value: Any) -> None:
        """Store `value`, derived from `derived.context` alone, under `key` for that
        tenant, until the tenant's context is replaced. Takes no lock: when the context
        was replaced meanwhile, the value is taken back out of the index (the stream
        thread installs the new Derived first, then drops the old one's keys, so one of
        the two sees the other's write)."""
        tenant_id = derived.context["tenant_id"]
        index = self._derived_by_key
        by_tenant = index.get(key)
        if by_tenant is None:
            by_tenant = index.setdefault(key, {})
        derived[key] = value
        by_tenant[tenant_id] = value
        if self._derived.get(tenant_id) is not derived and by_tenant.get(tenant_id) is value:
            by_tenant.pop(tenant_id, None)

    def _reached(self, tenant_id: str, revision: int) -> bool:
        return self._complete >= revision or self._revisions.get(tenant_id, 0) >= revision

    # The stream

    def _hydrate(self) -> None:
        contexts = self.client.subtree_contexts(self.root_tenant_id)
        meta = self.client.last_response
        revision = meta.revision if meta is not None and meta.revision is not None else 0
        fresh = {context["tenant_id"]: context for context in contexts}
        derived = {tenant_id: Derived(context) for tenant_id, context in fresh.items()}
        old = self._contexts
        with self._changed:
            self._contexts = fresh
            self._derived = derived
            self._derived_by_key = {}
            self._revisions = {}
            self._revision = max(self._revision, revision)
            self._complete = max(self._complete, revision)
            self._last_event_id = None
            self._hydrated_revision = revision
            self._last_activity = time.monotonic()
            self._changed.notify_all()
        for tenant_id in old.keys() | fresh.keys():
            before, after = old.get(tenant_id), fresh.get(tenant_id)
            if before != after and (old or self.resets):
                self._notify(tenant_id, before, after)

    def _follow(self) -> None:
        failures = 0
        while not self._stop.is_set():
            delay: float | None = None
            try:
                if self._stream():
                    failures = 0
                    continue
            except ApiError as error:
                self.last_error = error
                delay = error.retry_after
            except (httpx.HTTPError, ValueError, KeyError) as error:
                self.last_error = error
            except Exception as error:  # the thread must outlive any surprise
                self.last_error = error
                log.exception("context stream: unexpected failure")
            finally:
                # A stream that was established and then ended (the service stops
                # streams after a while; a proxy cuts them) starts the backoff afresh.
                if self.connected:
                    failures = 0
                self.connected = False
                self._response = None
            if self._stop.is_set():
                break
            failures += 1
            self.reconnects += 1
            if delay is None:
                ceiling = min(self.backoff_max, self.backoff_base * 2.0**failures)
                delay = ceiling / 2 + random.uniform(0, ceiling / 2)  # noqa: S311 (jitter)
            log.info("context stream: reconnecting in %.2fs (%r)", delay, self.last_error)
            self._stop.wait(min(delay, 60.0))

    def _stream(self) -> bool:
        """One connection; True when it ended for a rehydration (reconnect at once)."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        path = f"/api/v1/tenants/{self.root_tenant_id}/context-changes"
        if self._last_event_id is not None:
            headers["Last-Event-ID"] = self._last_event_id
        else:
            path += f"?since={self._hydrated_revision}"
        if self.client.consistency_token is not None:
            headers[CONSISTENCY_TOKEN] = self.client.consistency_token
        timeout = httpx.Timeout(10.0, read=self.read_timeout)
        response = self.client.stream(path, headers, timeout)
        self._response = response
        try:
            if response.status_code != 200:
                response.read()
                error = error_of(response)
                if error.retry_after is None:
                    error.retry_after = parse_retry_after(response.headers.get("Retry-After"))
                raise error
            self.connected = True
            self._last_activity = time.monotonic()
            parser = Parser()
            rest = b""
            for chunk in response.iter_bytes():
                if self._stop.is_set():
                    return False
                self._last_activity = time.monotonic()
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                events: list[Event] = []
                for raw in lines:
                    event = parser.feed(raw.rstrip(b"\r").decode("utf-8", "replace"))
                    if event is None:
                        continue
                    if event.event == "reset":
                        self._apply(events)
                        self.resets += 1
                        self._hydrate()
                        return True
                    events.append(event)
                # One chunk's events at once: the service writes a page of events in one
                # write, so waiters wake once a revision's events are in, not after the
                # first of them.
                self._apply(events)
            return False
        finally:
            response.close()

    def _apply(self, events: list[Event]) -> None:
        changes: list[tuple[str, TenantContext | None, TenantContext | None]] = []
        with self._changed:
            for event in events:
                if event.event not in ("context", "removed"):
                    continue
                data = json.loads(event.data)
                revision = int(data["revision"])
                tenant_id = str(data["tenant_id"])
                old = self._contexts.get(tenant_id)
                new: TenantContext | None = data["context"] if event.event == "context" else None
                if new is None:
                    self._contexts.pop(tenant_id, None)
                    replaced = self._derived.pop(tenant_id, None)
                else:
                    self._contexts[tenant_id] = new
                    replaced = self._derived.get(tenant_id)
                    self._derived[tenant_id] = Derived(new)
                if replaced:  # after the new Derived is in: see keep()
                    for key in tuple(replaced):
                        by_tenant = self._derived_by_key.get(key)
                        if by_tenant is not None:
                            by_tenant.pop(tenant_id, None)
                self._revisions[tenant_id] = revision
                if revision > self._revision:
                    self._complete = max(self._complete, revision - 1)
                    self._revision = revision
                if event.id is not None:
                    self._last_event_id = event.id
                if old != new:
                    changes.append((tenant_id, old, new))
            if events:
                self._changed.notify_all()
        for tenant_id, old, new in changes:
            self._notify(tenant_id, old, new)

    def _notify(self, tenant_id: str, old: TenantContext | None, new: TenantContext | None) -> None:
        if self.on_change is None:
            return
        try:
            self.on_change(tenant_id, old, new)
        except Exception:
            log.exception("context cache: the change callback failed for %s", tenant_id)


def _interrupt(response: httpx.Response) -> None:
    """End a stream another thread is reading: closing the response alone does not wake
    a read blocked on the socket (it would wait for the next heartbeat)."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(Exception):
        response.close()
