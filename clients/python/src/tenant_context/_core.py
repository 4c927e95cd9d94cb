"""What the sync and async clients share: a call's description, retries, error mapping.

A `Call` says what to send and how to read the answer; the clients only move bytes. An
Idempotency-Key is drawn once per call, so a retried write is applied at most once.
"""

from __future__ import annotations

import contextvars
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Generic, NotRequired, TypedDict, TypeVar
from urllib.parse import quote

import httpx

from tenant_context.errors import ApiError, error_class

T = TypeVar("T")

USER_AGENT = "tenant-context-python/0.1"
REVISION = "X-Revision"
CONSISTENCY_TOKEN = "X-Consistency-Token"  # noqa: S105 (a header name)
IDEMPOTENCY_KEY = "Idempotency-Key"
RETRYABLE_STATUSES = frozenset({429, 503})


class CallOptions(TypedDict):
    """Per-call options every operation accepts."""

    consistency_token: NotRequired[str]
    idempotency_key: NotRequired[str]
    headers: NotRequired[Mapping[str, str]]
    timeout: NotRequired[float]


@dataclass(frozen=True)
class ResponseMeta:
    """What a call's answer said besides its body."""

    status: int
    request_id: str | None
    revision: int | None
    consistency_token: str | None
    etag: str | None
    headers: httpx.Headers


@dataclass(frozen=True)
class Response:
    """A raw answer of `Client.request` (any path of the API)."""

    meta: ResponseMeta
    body: Any


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    # A POST that changes something: sends an Idempotency-Key.
    write: bool = False
    headers: Mapping[str, str] = field(default_factory=dict)
    # Answers whose status is not an error though not 2xx (304 of a conditional read).
    accept: frozenset[int] = frozenset()
    # The parsed JSON body as the result type (typed dicts need no conversion).
    parse: Callable[[Any], T] = field(default=lambda body: body)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of 429 and 503 answers (and of connection failures of reads and of writes
    carrying an Idempotency-Key): Retry-After when the service sends it, else exponential
    backoff with jitter; every wait and the number of attempts bounded."""

    max_retries: int = 3
    backoff_base: float = 0.2
    backoff_max: float = 5.0
    max_retry_after: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.backoff_max, self.backoff_base * 2.0**attempt)
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # noqa: S311 (jitter, not secrecy)


def segment(value: str) -> str:
    """A path segment (config and permission keys may hold any character)."""
    return quote(str(value), safe="")


def parse_retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        import time

        return max(float(parsedate_to_datetime(value).timestamp()) - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def meta_of(response: httpx.Response) -> ResponseMeta:
    revision = response.headers.get(REVISION)
    return ResponseMeta(
        status=response.status_code,
        request_id=response.headers.get("X-Request-ID"),
        revision=int(revision) if revision and revision.isdigit() else None,
        consistency_token=response.headers.get(CONSISTENCY_TOKEN),
        etag=response.headers.get("ETag"),
        headers=response.headers,
    )


def body_of(response: httpx.Response) -> Any:
    if response.status_code in (204, 304) or not response.content:
        return None
    if "json" in response.headers.get("Content-Type", ""):
        return response.json()
    return response.text


def error_of(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        code = str(detail.get("code", "UNKNOWN"))
        message = str(detail.get("message", ""))
        details = detail.get("details")
    else:
        code, message, details = f"HTTP_{response.status_code}", response.text[:200], None
    return error_class(response.status_code)(
        response.status_code, code, message,
        request_id=response.headers.get("X-Request-ID"),
        details=details if isinstance(details, list) else None,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
        body=body,
    )  # fmt: skip


class Base:
    """Configuration and bookkeeping common to Client and AsyncClient."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        read_your_writes: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if api_key is not None and token is not None:
            raise ValueError("give api_key or token, not both")
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        # Send the token of this client's latest write on every read (a read then never
        # misses that write, at the cost of skipping the service's read cache).
        self.read_your_writes = read_your_writes
        self.consistency_token: str | None = None
        self.headers: dict[str, str] = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if api_key is not None:
            self.headers["X-API-Key"] = api_key
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        self.headers.update(headers or {})
        self._last: contextvars.ContextVar[ResponseMeta | None] = contextvars.ContextVar(
            f"tenant_context_last_{id(self)}", default=None
        )

    @property
    def last_response(self) -> ResponseMeta | None:
        """The meta of the latest answer this thread (or asyncio task) received: its
        X-Revision, X-Consistency-Token, request id."""
        return self._last.get()

    def _request_headers(self, call: Call[Any], options: CallOptions) -> dict[str, str]:
        headers = dict(call.headers)
        token = options.get("consistency_token")
        if token is None and self.read_your_writes and call.method == "GET":
            token = self.consistency_token
        if token is not None:
            headers[CONSISTENCY_TOKEN] = token
        if call.write:
            headers[IDEMPOTENCY_KEY] = options.get("idempotency_key") or str(uuid.uuid4())
        headers.update(options.get("headers") or {})
        return headers

    def _retry_delay(
        self, call: Call[Any], headers: Mapping[str, str], attempt: int, response: httpx.Response
    ) -> float | None:
        if attempt >= self.retry.max_retries or response.status_code not in RETRYABLE_STATUSES:
            return None
        # A 429 was refused before any work; a 503 may come after, so only a call that is
        # safe to repeat is sent again.
        if response.status_code == 503 and not self._repeatable(call, headers):
            return None
        return self.retry.delay(attempt, parse_retry_after(response.headers.get("Retry-After")))

    def _transport_retry_delay(
        self, call: Call[Any], headers: Mapping[str, str], attempt: int
    ) -> float | None:
        if attempt >= self.retry.max_retries or not self._repeatable(call, headers):
            return None
        return self.retry.delay(attempt, None)

    @staticmethod
    def _repeatable(call: Call[Any], headers: Mapping[str, str]) -> bool:
        return call.method in ("GET", "HEAD", "PUT", "DELETE") or IDEMPOTENCY_KEY in headers

    def _finish(self, call: Call[T], response: httpx.Response) -> T:
        meta = meta_of(response)
        self._last.set(meta)
        if meta.consistency_token is not None and call.method != "GET":
            self.consistency_token = meta.consistency_token
        if response.is_success or response.status_code in call.accept:
            return call.parse(body_of(response))
        raise error_of(response)
