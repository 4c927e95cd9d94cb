"""Schemathesis against a live service, from the document that service serves.

The document is generated here from the same registration create_app performs (so it
holds every registered route, whichever branches added them), and a test checks that the
live service serves exactly it. Every operation gets a bounded number of generated
requests, valid and invalid ones, sent with an admin key. The run fails on any 5xx, any
status the document does not list for that operation, any body or content type that
differs from the document, a missing documented header, any invalid request the service
accepts, and any valid request it refuses - but for the refusals listed in
LEGITIMATE_REFUSALS (tests/schemathesis_hooks.py), each with the reason a schema cannot rule it out.

A second run follows the document's links (the stateful phase): it creates tenants,
keys, roles and webhooks and calls the operations on their ids. Every POST gets a fresh
Idempotency-Key, so no request replays or collides with an earlier one (the hook of
tests/schemathesis_hooks.py, which the shipped schemathesis.toml uses too).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import requests
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Flaky
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
)

from service.app import apis
from service.http.openapi.document import build_document
from service.http.routing import register
from tests.conftest import HMAC_SECRET, base_env
from tests.schemathesis_hooks import (
    fresh_idempotency_key,
    status_code_documented,
    valid_requests_are_accepted,
)
from tests.support.live import admin_key
from tests.support.processes import REPO_ROOT, ServiceProcess

EXAMPLES_PER_OPERATION = 12
STATEFUL_EXAMPLES = 25
STATEFUL_STEPS = 6
CHECKS = [
    not_a_server_error,
    status_code_documented,  # status_code_conformance, a conditional read's 304 expected
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    valid_requests_are_accepted,
]


@dataclass
class Live:
    url: str
    headers: dict[str, str]
    session: requests.Session
    # Ids and keys that exist, by the path prefix that addresses them.
    known: dict[str, list[str]] = field(default_factory=dict)

    def post(self, path: str, body: dict[str, Any], expect: int = 201) -> Any:
        resp = self.session.post(self.url + path, json=body, headers=self.headers, timeout=10)
        assert resp.status_code == expect, resp.text
        return resp.json()

    def put(self, path: str, body: dict[str, Any]) -> None:
        resp = self.session.put(self.url + path, json=body, headers=self.headers, timeout=10)
        assert resp.status_code == 201, resp.text


def seed(live: Live) -> None:
    """A small tree with config, permissions, a key and a role, so that generated
    requests also reach the answers of resources that exist, not only 404s."""
    root = live.post("/api/v1/tenants", {"name": "Root", "slug": "st_root"})["id"]
    child = live.post("/api/v1/tenants", {"name": "C", "slug": "st_child", "parent_id": root})["id"]
    leaf = live.post("/api/v1/tenants", {"name": "L", "slug": "st_leaf", "parent_id": child})["id"]
    tenants = [root, child, leaf]
    for tenant, (key, flags) in zip(
        tenants,
        [("theme", {"locked": True}), ("token", {"sensitive": True}), ("color", {})],
        strict=True,
    ):
        live.put(f"/api/v1/tenants/{tenant}/config/{key}", {"value": key, **flags})
    live.put(f"/api/v1/tenants/{root}/permissions/billing", {"value": True, "mode": "LOCKED"})
    live.put(f"/api/v1/tenants/{child}/permissions/export", {"value": False})
    role = live.post("/api/v1/roles", {"name": "st-role", "scopes": ["read"]})["id"]
    keys = [live.post("/api/v1/api-keys", {"name": f"st-{i}", "role_id": role})["id"]
            for i in range(2)]  # fmt: skip
    live.known = {
        "/api/v1/tenants/{id}/config/{key}": ["theme", "token", "color"],
        "/api/v1/tenants/{id}/permissions/{key}": ["billing", "export"],
        "/api/v1/tenants/": tenants,
        "/api/v1/api-keys/": keys,
        "/api/v1/roles/": [role],
    }


_turn = itertools.count()
_pick = random.Random(8)


def aim_at_known(case: schemathesis.Case, live: Live) -> None:
    """Two cases in three address a resource that exists (when their id is valid)."""
    fresh_idempotency_key(case)
    if next(_turn) % 3 == 0:
        return
    params = case.path_parameters or {}
    for prefix, values in live.known.items():
        if "{key}" in prefix and case.path == prefix and "key" in params:
            params["key"] = _pick.choice(values)
        elif case.path.startswith(prefix) and _is_uuid(params.get("id")):
            params["id"] = _pick.choice(values)


def _is_uuid(value: object) -> bool:
    try:
        return isinstance(value, str) and len(value) == 36 and bool(uuid.UUID(value))
    except ValueError:
        return False


@pytest.fixture(scope="module")
def live(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    folder = tmp_path_factory.mktemp("schemathesis")
    admin = asyncio.run(admin_key(db_url, HMAC_SECRET))
    # Streams of context changes end quickly, so that a call to one returns.
    env = base_env(db_url, folder, LOG_LEVEL="warning", CONTEXT_STREAM_MAX_SECONDS="0.5")
    service = ServiceProcess(env, folder, cwd=REPO_ROOT)
    try:
        service.wait_ready()
        with requests.Session() as session:
            state = Live(service.url, {"X-API-Key": admin}, session)
            seed(state)
            yield state
    finally:
        code = service.stop()
        assert code == 0, service.output()[-4000:]
    # Whatever the run sent, nothing may have reached the unhandled-error path.
    assert '"unhandled error"' not in service.output(), service.output()[-4000:]


def _document() -> dict[str, Any]:
    """The document of every endpoint create_app registers (the same call it makes)."""
    app = web.Application()
    return build_document(register(app, apis()).values())


DOCUMENT = _document()
# Its own configuration, not the repository's schemathesis.toml (for runs by hand).
schema = schemathesis.openapi.from_dict(DOCUMENT, config=SchemathesisConfig())
schema.config.generation.update(max_examples=EXAMPLES_PER_OPERATION)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,  # the same cases on every run: CI is not a lottery
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_service_agrees_with_its_document(case: schemathesis.Case, live: Live) -> None:
    aim_at_known(case, live)
    case.call_and_validate(
        base_url=live.url, session=live.session, headers=live.headers, checks=CHECKS
    )


def test_the_run_uses_the_document_the_live_service_serves(live: Live) -> None:
    served = live.session.get(f"{live.url}/api/v1/openapi.json", timeout=10)
    assert served.status_code == 200
    assert served.json() == DOCUMENT


def test_the_run_covers_every_documented_operation() -> None:
    operations = {
        (method.upper(), path) for path, item in DOCUMENT["paths"].items() for method in item
    }
    found = {(op.ok().method.upper(), op.ok().path) for op in schema.get_all_operations()}
    assert found == operations
    assert len(operations) >= 30


STATEFUL_CHECKS = [c for c in CHECKS if c is not negative_data_rejection]


def test_the_links_lead_to_working_calls(live: Live) -> None:
    """The stateful phase: chains of create -> operations on the created id, by links.

    Failures are collected as they are seen rather than raised: the service's state moves
    on, so Hypothesis cannot replay a chain exactly (it reports that as Flaky, which the
    schemathesis runner also treats as the end of the phase, not as a failure).
    """
    linked = schemathesis.openapi.from_dict(DOCUMENT, config=SchemathesisConfig())
    # Valid requests only (with the same rules on refusals): chains need creates to succeed.
    linked.config.generation.update(
        modes=[GenerationMode.POSITIVE], allow_x00=False, with_security_parameters=False
    )
    machine = linked.as_state_machine()
    failures: list[str] = []
    calls: list[str] = []

    class Machine(machine):  # type: ignore[misc, valid-type]
        def before_call(self, case: schemathesis.Case) -> None:
            fresh_idempotency_key(case)

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": live.url, "session": live.session, "headers": live.headers}

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            calls.append(f"{case.method} {case.path} -> {response.status_code}")
            try:
                case.validate_response(response, checks=STATEFUL_CHECKS)
            except (Exception, BaseExceptionGroup) as exc:  # every check failure counts
                failures.append(f"{case.method} {case.path}: {exc}")

    with contextlib.suppress(Flaky):
        Machine.run(
            settings=settings(
                max_examples=STATEFUL_EXAMPLES,
                stateful_step_count=STATEFUL_STEPS,
                deadline=None,
                derandomize=True,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
        )
    assert failures == []
    reached = [c for c in calls if "{id}" in c and c.endswith(("200", "201", "204"))]
    assert len(calls) >= STATEFUL_EXAMPLES, calls
    assert reached, sorted(set(calls))  # some chains reached an operation on a created id
