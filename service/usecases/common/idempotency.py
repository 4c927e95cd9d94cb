"""Idempotency-Key on POST (Stripe semantics, docs/decisions/api.md "Idempotency and faults").

A key belongs to its caller (the key or token, with its tenant and scopes): the same key
sent by another caller is another key. The first 2xx answer to (caller, key) is stored
for 24 hours with a digest of the request (method, path and query, If-Match, the body
as canonical JSON). The same key with the same request replays the stored answer and
does nothing more; with another request it is 422 IDEMPOTENCY_KEY_REUSED. A request
sent again while the first is still running waits for it (then replays its answer, or
runs when the first failed) up to WAIT_SECONDS, then gets 409 IDEMPOTENCY_KEY_IN_USE.
Answers that are not 2xx are not stored: such a request changed nothing, and running
it again is safe.

Stored answers are encrypted (they hold tenant data, and key creation's plaintext key)
and bound to their record; neither the caller nor the key is stored in clear.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

import asyncpg
import orjson

from service.auth.principal import Principal
from service.base.crypto import PURPOSE_IDEMPOTENT_ANSWER, idempotency_aad
from service.base.errors import ServiceError
from service.base.ids import uuid7
from service.repositories.idempotency import NewStoredAnswer, StoredAnswer
from service.usecases.common.deps import Deps

# How long a request waits for a concurrent one with the same key before giving up.
WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.05
# Headers of an answer worth replaying; the rest (request id, rate limits) are the new
# request's own.
KEPT_HEADERS = ("Location", "ETag", "Cache-Control", "Content-Disposition")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True, slots=True)
class Ticket:
    """A request's identity for idempotency: whose key, and what was asked."""

    key_hash: bytes
    request_hash: bytes


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    content_type: str | None
    body: bytes


class AnswerAlreadyStored(Exception):
    """Raised inside the request's first transaction: a concurrent request with the same
    key committed meanwhile; its answer is replayed and this request's work discarded."""

    def __init__(self, stored: StoredAnswer) -> None:
        super().__init__("an answer is stored for this idempotency key")
        self.stored = stored


def _digest(*parts: bytes) -> bytes:
    hasher = hashlib.sha256()
    for part in parts:
        # Length-prefixed, so no two different part lists hash alike.
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.digest()


def canonical_body(body: bytes) -> bytes:
    """JSON bodies compare by content (key order and spacing do not matter); anything
    else byte for byte."""
    try:
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        return body
    except TypeError:  # a value orjson can read but not write back (huge integers)
        return body


def caller_of(principal: Principal) -> bytes:
    """Who owns a key: the same actor with another tenant restriction or other scopes is
    another caller, so a replay never shows an answer the caller could not have got."""
    return _digest(
        principal.actor_type.encode(),
        principal.actor_id.encode(),
        str(principal.tenant_id or "").encode(),
        " ".join(sorted(principal.scopes)).encode(),
    )


def ticket_for(
    principal: Principal,
    key: str,
    *,
    method: str,
    path_qs: str,
    if_match: str | None,
    body: bytes,
) -> Ticket:
    return Ticket(
        key_hash=_digest(b"idempotency-key", caller_of(principal), key.encode()),
        request_hash=_digest(
            method.encode(),
            path_qs.encode(),
            (if_match or "").encode(),
            canonical_body(body),
        ),
    )


def mentioned_ids(body: bytes) -> list[UUID]:
    """Every UUID the answer names (tenant ids among them), for the GDPR purge."""
    text = body.decode("utf-8", errors="replace")
    return sorted({UUID(m) for m in _UUID.findall(text)})


class IdempotentAnswers:
    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.repo = deps.repos.idempotency

    async def find(self, ticket: Ticket) -> Answer | None:
        """The stored answer for this ticket (fast path, before any work); 422 when the
        key was used for another request."""
        stored = await self.deps.db.run(
            lambda conn: self.repo.get_idempotency_key(conn, ticket.key_hash)
        )
        return None if stored is None else self.open(ticket, stored)

    async def claim(self, conn: asyncpg.Connection, ticket: Ticket) -> None:
        """First thing in the request's transaction: wait while a request with the same
        key runs; raise AnswerAlreadyStored if one committed an answer meanwhile."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not await self.repo.lock_idempotency_key(conn, ticket.key_hash):
            if time.monotonic() >= deadline:
                raise ServiceError(
                    "IDEMPOTENCY_KEY_IN_USE",
                    "a request with this Idempotency-Key is still running; retry shortly",
                    headers={"Retry-After": "1"},
                )
            await asyncio.sleep(_POLL_SECONDS)
        stored = await self.repo.get_idempotency_key(conn, ticket.key_hash)
        if stored is not None:
            raise AnswerAlreadyStored(stored)

    def open(self, ticket: Ticket, stored: StoredAnswer) -> Answer:
        if stored.request_hash != ticket.request_hash:
            raise ServiceError(
                "IDEMPOTENCY_KEY_REUSED",
                "this Idempotency-Key was used with another request in the last 24 hours; "
                "use a new key for a new request",
            )
        # A value no configured key opens raises DecryptionError: a server-side fault
        # (500), like a sensitive value that cannot be revealed.
        plain = self.deps.keyring.encryptor.decrypt(
            stored.answer, purpose=PURPOSE_IDEMPOTENT_ANSWER, aad=idempotency_aad(ticket.key_hash)
        )
        data = orjson.loads(plain)
        return Answer(
            status=stored.status,
            headers=dict(data["headers"]),
            content_type=data["content_type"],
            body=base64.b64decode(data["body"]),
        )

    def seal(self, ticket: Ticket, answer: Answer) -> NewStoredAnswer:
        plain = orjson.dumps(
            {
                "headers": kept_headers(answer.headers),
                "content_type": answer.content_type,
                "body": base64.b64encode(answer.body).decode(),
            }
        )
        return NewStoredAnswer(
            id=uuid7(),
            key_hash=ticket.key_hash,
            request_hash=ticket.request_hash,
            status=answer.status,
            answer=self.deps.keyring.encryptor.encrypt(
                plain, purpose=PURPOSE_IDEMPOTENT_ANSWER, aad=idempotency_aad(ticket.key_hash)
            ),
            mentioned_ids=mentioned_ids(answer.body),
        )

    async def save(self, conn: asyncpg.Connection, ticket: Ticket, answer: Answer) -> None:
        """Store the answer in the caller's transaction (the change's own)."""
        await self.repo.insert_idempotency_key(conn, self.seal(ticket, answer))

    async def save_alone(self, ticket: Ticket, answer: Answer) -> None:
        """Store the answer in a transaction of its own (requests whose work committed in
        several transactions); a concurrent request's stored answer is kept."""
        sealed = self.seal(ticket, answer)
        await self.deps.db.transaction(lambda conn: self.repo.insert_idempotency_key(conn, sealed))


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: headers[name] for name in KEPT_HEADERS if name in headers}
