"""The official OpenFeature Remote Evaluation Protocol providers, with no code of ours,
reading tenant config from the service: Python's `openfeature-provider-ofrep` on the
OpenFeature SDK, and Node's `@openfeature/ofrep-provider` on `@openfeature/server-sdk`
(with `@openfeature/ofrep-core` for the bulk evaluation and its 304). The Node packages
install from tests/support/ofrep_node's lock into its node_modules (git-ignored)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from openfeature import api as openfeature_api
from openfeature.client import OpenFeatureClient
from openfeature.contrib.provider.ofrep import OFREPProvider
from openfeature.evaluation_context import EvaluationContext
from openfeature.exception import ErrorCode

from tenant_context import Client
from tests.support.client_service import issue_key, live  # noqa: F401 (fixture)
from tests.support.live_app import LiveApp

DOMAIN = "ofrep-tests"
NODE_DIR = Path(__file__).parent / "support" / "ofrep_node"


def slug() -> str:
    return "o" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def key(live: LiveApp) -> str:  # noqa: F811
    return issue_key(live)


@pytest.fixture(scope="module")
def api(live: LiveApp, key: str) -> Client:  # noqa: F811
    return Client(live.base, api_key=key)


@pytest.fixture(scope="module")
def tree(api: Client) -> dict[str, str]:
    root = api.create_tenant("Root", slug(), config={"plan": "pro", "seats": 5})
    api.put_config(root["id"], "beta", True, locked=True)
    child = api.create_tenant("Child", slug(), parent_id=root["id"], config={"seats": 9})
    return {"root": root["id"], "child": child["id"]}


@pytest.fixture(scope="module")
def flags(live: LiveApp, key: str) -> Iterator[OpenFeatureClient]:  # noqa: F811
    provider = OFREPProvider(live.base, headers_factory=lambda: {"X-API-Key": key})
    openfeature_api.set_provider_and_wait(provider, domain=DOMAIN)
    try:
        yield openfeature_api.get_client(DOMAIN)
    finally:
        openfeature_api.clear_providers()


def test_python_ofrep_provider_values(flags: OpenFeatureClient, tree: dict[str, str]) -> None:
    child = EvaluationContext(targeting_key=tree["child"])
    plan = flags.get_string_details("plan", "free", child)
    assert (plan.value, plan.error_code) == ("pro", None)
    assert flags.get_integer_value("seats", 0, child) == 9
    assert flags.get_boolean_value("beta", False, child) is True


def test_python_ofrep_provider_errors(flags: OpenFeatureClient, tree: dict[str, str]) -> None:
    child = EvaluationContext(targeting_key=tree["child"])
    missing = flags.get_string_details("no_such_key", "fallback", child)
    assert (missing.value, missing.error_code) == ("fallback", ErrorCode.FLAG_NOT_FOUND)
    anonymous = flags.get_string_details("plan", "free", EvaluationContext())
    assert (anonymous.value, anonymous.error_code) == ("free", ErrorCode.TARGETING_KEY_MISSING)
    stranger = flags.get_string_details("plan", "free", EvaluationContext(str(uuid.uuid4())))
    assert (stranger.value, stranger.error_code) == ("free", ErrorCode.INVALID_CONTEXT)


def test_bulk_evaluation_and_304(api: Client, tree: dict[str, str]) -> None:
    context = {"targetingKey": tree["child"]}
    first = api.evaluate_flags(context)
    assert first is not None
    etag = api.last_response.etag if api.last_response else None
    assert etag
    values = {flag["key"]: flag.get("value") for flag in first["flags"]}
    assert values == {"plan": "pro", "seats": 9, "beta": True}
    assert api.evaluate_flags(context, etag=etag) is None
    assert api.last_response is not None
    assert api.last_response.status == 304
    api.put_config(tree["root"], "plan", "enterprise")
    changed = api.evaluate_flags(context, etag=etag)
    assert changed is not None
    assert {f["key"]: f.get("value") for f in changed["flags"]}["plan"] == "enterprise"
    api.put_config(tree["root"], "plan", "pro")


def _node_ready() -> str | None:
    """Why the Node check cannot run, or None when node_modules is in place."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return "node and npm are needed for the Node OFREP provider check (Debian: nodejs, npm)"
    if (NODE_DIR / "node_modules" / "@openfeature" / "ofrep-provider").exists():
        return None
    result = subprocess.run(
        [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
        cwd=NODE_DIR, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        return f"npm ci failed (is the npm registry reachable?): {result.stderr[-500:]}"
    return None


def test_node_ofrep_provider(live: LiveApp, key: str, tree: dict[str, str]) -> None:  # noqa: F811
    reason = _node_ready()
    if reason is not None:
        pytest.skip(reason)
    node = shutil.which("node")
    assert node is not None
    flags = [["plan", "string", "free"], ["seats", "number", 0], ["beta", "boolean", False],
             ["no_such_key", "string", "fallback"]]  # fmt: skip
    request = {"baseUrl": live.base, "apiKey": key, "tenantId": tree["child"], "flags": flags}
    result = subprocess.run(
        [node, str(NODE_DIR / "evaluate.mjs"), json.dumps(request)],
        cwd=NODE_DIR, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    details = answer["details"]
    assert details["plan"]["value"] == "pro"
    assert details["plan"]["errorCode"] is None
    assert details["seats"]["value"] == 9
    assert details["beta"]["value"] is True
    assert details["no_such_key"] == {
        "value": "fallback", "reason": "ERROR", "errorCode": "FLAG_NOT_FOUND",
        "flagMetadata": {},
    }  # fmt: skip
    assert answer["bulk"]["status"] == 200
    assert answer["bulk"]["etag"]
    bulk = {flag["key"]: flag.get("value") for flag in answer["bulk"]["flags"]}
    assert bulk == {"plan": "pro", "seats": 9, "beta": True}
    assert answer["bulkAgain"] == {"status": 304}
