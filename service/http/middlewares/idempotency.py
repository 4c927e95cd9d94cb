"""The Idempotency-Key middleware (runs after authentication; POST only).

A stored answer is replayed before any work. Otherwise the request runs with its first
transaction held (service/db/held.py): the claim on the key is taken first in it, and
the 2xx answer is stored in it just before it commits, so the change and its stored
answer commit together or not at all. Endpoints declared `idempotency="after_work"`
(work committed in several transactions by design) store the answer afterwards.
"""

from __future__ import annotations

import re

import asyncpg
from aiohttp import web

from service.base.errors import FieldError, ServiceError
from service.db.held import HeldTransaction, holding
from service.http.appkeys import DATABASE, ENDPOINTS, use_cases
from service.http.middlewares.exchange import exchange_of
from service.http.routing import Handler, endpoint_for
from service.usecases.common.idempotency import (
    Answer,
    AnswerAlreadyStored,
    IdempotentAnswers,
    Ticket,
    kept_headers,
    ticket_for,
)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
# Visible ASCII, as Stripe's keys (a UUID is the usual choice).
_KEY = re.compile(r"[\x21-\x7e]{1,255}")


def _key_of(request: web.Request) -> str:
    values = request.headers.getall(HEADER)
    if len(values) != 1 or not _KEY.fullmatch(values[0]):
        raise ServiceError(
            "VALIDATION_ERROR",
            f"{HEADER}: must be given once, 1 to 255 visible ASCII characters",
            details=[FieldError(HEADER, "1 to 255 visible ASCII characters, given once")],
        )
    return values[0]


def _answer_of(response: web.StreamResponse) -> Answer | None:
    """The response as a storable answer, when it is a complete 2xx answer."""
    if not 200 <= response.status < 300 or not isinstance(response, web.Response):
        return None
    body = response.body
    if body is not None and not isinstance(body, bytes | bytearray):
        return None
    return Answer(
        status=response.status,
        headers=kept_headers(response.headers),
        content_type=response.content_type if body else None,
        body=bytes(body or b""),
    )


async def _store_nothing(conn: asyncpg.Connection) -> None:
    return None


def _replay(answer: Answer) -> web.Response:
    response = web.Response(status=answer.status, body=answer.body or None)
    response.headers.update(answer.headers)
    if answer.content_type is not None:
        response.content_type = answer.content_type
    response.headers[REPLAYED_HEADER] = "true"
    return response


@web.middleware
async def idempotency(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method != "POST" or HEADER not in request.headers:
        return await handler(request)
    endpoint = endpoint_for(request, request.app[ENDPOINTS])
    principal = exchange_of(request).principal
    if endpoint is None or principal is None:
        return await handler(request)  # public or unknown routes: nothing to protect
    key = _key_of(request)
    body = await request.read() if request.body_exists else b""
    answers = use_cases(request).idempotent_answers
    ticket = ticket_for(
        principal,
        key,
        method=request.method,
        path_qs=request.path_qs,
        if_match=request.headers.get("If-Match"),
        body=body,
    )
    stored = await answers.find(ticket)
    if stored is not None:
        return _replay(stored)
    if endpoint.idempotency == "after_work":
        response = await handler(request)
        answer = _answer_of(response)
        if answer is not None:
            await answers.save_alone(ticket, answer)
        return response
    return await _run_held(request, handler, answers, ticket)


async def _run_held(
    request: web.Request, handler: Handler, answers: IdempotentAnswers, ticket: Ticket
) -> web.StreamResponse:
    database = request.app[DATABASE]
    held = HeldTransaction(lambda conn: answers.claim(conn, ticket))
    with holding(held):
        try:
            response = await handler(request)
        except AnswerAlreadyStored as found:
            await database.settle_held(held, None)
            return _replay(answers.open(ticket, found.stored))
        except BaseException:
            await database.settle_held(held, None)
            raise
        answer = _answer_of(response)
        if held.is_open:
            if not 200 <= response.status < 300:
                await database.settle_held(held, None)  # refused: nothing happened
            elif answer is None:
                await database.settle_held(held, _store_nothing)  # not replayable as is
            else:
                await database.settle_held(held, lambda conn: answers.save(conn, ticket, answer))
            return response
    # The handler opened no transaction (it changed nothing in one): store on its own.
    if answer is not None:
        await answers.save_alone(ticket, answer)
    return response
