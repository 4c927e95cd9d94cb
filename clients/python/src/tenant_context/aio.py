"""The asyncio client (httpx.AsyncClient): the same operations as `Client`, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import TypeVar

import httpx

from tenant_context._aops_admin import AsyncAdminOperations
from tenant_context._aops_core import AsyncCoreOperations
from tenant_context._core import Base, Call, CallOptions, RetryPolicy
from tenant_context.errors import TransportError

T = TypeVar("T")


class AsyncClient(Base, AsyncCoreOperations, AsyncAdminOperations):
    """Every operation of the API as a coroutine method; errors raise `ApiError` subclasses."""

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
        http: httpx.AsyncClient | None = None,
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
        self.http = http or httpx.AsyncClient(timeout=timeout)

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _run(self, call: Call[T], options: CallOptions) -> T:
        headers = {**self.headers, **self._request_headers(call, options)}
        timeout = options.get("timeout", self.timeout)
        attempt = 0
        while True:
            try:
                response = await self.http.request(
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
                await response.aclose()
            await asyncio.sleep(delay)
            attempt += 1
