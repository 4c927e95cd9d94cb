"""The synchronous client (httpx.Client): one connection pool, safe to share between
threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import TypeVar

import httpx

from tenant_context._core import Base, Call, CallOptions, RetryPolicy
from tenant_context._ops_admin import AdminOperations
from tenant_context._ops_core import CoreOperations
from tenant_context.errors import TransportError

T = TypeVar("T")


class Client(Base, CoreOperations, AdminOperations):
    """Every operation of the API as a method; errors raise `ApiError` subclasses.

    >>> client = Client("http://127.0.0.1:8080", api_key="sk_test_...")
    >>> client.get_context(tenant_id)["resolved_config"]["plan"]["value"]
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        read_your_writes: bool = False,
        headers: Mapping[str, str] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            token=token,
            retry=retry,
            read_your_writes=read_your_writes,
            headers=headers,
        )
        self.timeout = timeout
        self.http = http or httpx.Client(timeout=timeout)
        # Change streams hold their connection for as long as they run: they get a pool
        # of their own, so caches never starve the API calls (a given `http` serves both).
        self._streams: httpx.Client | None = None if http is None else http
        self._owns_streams = http is None
        self._streams_lock = threading.Lock()

    def close(self) -> None:
        self.http.close()
        if self._owns_streams and self._streams is not None:
            self._streams.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, call: Call[T], options: CallOptions) -> T:
        headers = {**self.headers, **self._request_headers(call, options)}
        timeout = options.get("timeout", self.timeout)
        attempt = 0
        while True:
            try:
                response = self.http.request(
                    call.method,
                    self.base_url + call.path,
                    params=call.params,
                    json=call.json,
                    headers=headers,
                    timeout=timeout,
                )
            except httpx.TransportError as error:
                delay = self._transport_retry_delay(call, headers, attempt)
                if delay is None:
                    raise TransportError(f"{call.method} {call.path}: {error!r}") from error
            else:
                delay = self._retry_delay(call, headers, attempt, response)
                if delay is None:
                    return self._finish(call, response)
                response.close()
            time.sleep(delay)
            attempt += 1

    def stream(
        self, path: str, headers: Mapping[str, str], timeout: httpx.Timeout
    ) -> httpx.Response:
        """An open streaming GET (the change stream); the caller closes it."""
        with self._streams_lock:
            if self._streams is None:
                unbounded = httpx.Limits(max_connections=None, max_keepalive_connections=0)
                self._streams = httpx.Client(limits=unbounded)
            streams = self._streams
        request = streams.build_request(
            "GET", self.base_url + path, headers={**self.headers, **headers}, timeout=timeout
        )
        return streams.send(request, stream=True)
