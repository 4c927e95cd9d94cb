"""The Python client (clients/python, module tenant_context) against the real service:
typed answers of the tenant, context, config and permission operations, errors as typed
exceptions with the service's code, Idempotency-Key replay, consistency tokens, bearer
tokens, retries of 429/503 honouring Retry-After, and the async twin."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

import tenant_context._mirror as mirror
from tenant_context import (
    AsyncClient,
    Client,
    ConflictError,
    GoneError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    RetryPolicy,
    ServiceUnavailableError,
)
from tenant_context import client as client_module
from tenant_context.sse import Event, Parser
from tests.conftest import JWT_SECRET
from tests.support.client_service import issue_key, live  # noqa: F401 (fixture)
from tests.support.keys import make_token
from tests.support.live_app import LiveApp


def slug() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def api(live: LiveApp) -> Client:  # noqa: F811
    return Client(live.base, api_key=issue_key(live))


def test_tenant_tree_context_config_and_permissions(api: Client) -> None:
    root = api.create_tenant("Root", slug(), config={"plan": "pro", "seats": 5})
    child = api.create_tenant("Child", slug(), parent_id=root["id"])
    leaf = api.create_tenant("Leaf", slug(), parent_id=child["id"])
    assert root["depth"] == 0
    assert leaf["depth"] == 2
    assert root["ancestry_path"] == f"/{root['id']}"
    assert [t["id"] for t in api.ancestors(leaf["id"])] == [root["id"], child["id"]]
    assert {t["id"] for t in api.descendants(root["id"])} == {child["id"], leaf["id"]}
    assert [t["id"] for t in api.children(root["id"])] == [child["id"]]

    entry = api.put_config(root["id"], "region:eu", "fra", locked=True)
    assert (entry["key"], entry["value"], entry["locked"]) == ("region:eu", "fra", True)
    assert api.get_config(root["id"], "region:eu")["value"] == "fra"
    with pytest.raises(ConflictError) as refused:
        api.put_config(leaf["id"], "region:eu", "nyc")
    assert refused.value.status == 409
    assert refused.value.code
    assert refused.value.request_id

    api.put_permission(child["id"], "billing.write", True, mode="LOCKED")
    assert api.get_permission(child["id"], "billing.write")["mode"] == "LOCKED"
    assert [p["key"] for p in api.list_permissions(child["id"])] == ["billing.write"]

    context = api.get_context(leaf["id"])
    assert context["tenant_id"] == leaf["id"]
    assert context["resolved_config"]["plan"] == {
        "key": "plan", "value": "pro", "source_tenant_id": root["id"],
        "inherited": True, "locked": False,
    }  # fmt: skip
    assert context["resolved_config"]["region:eu"]["locked"] is True
    permission = context["resolved_permissions"]["billing.write"]
    assert (permission["value"], permission["source_tenant_id"]) == (True, child["id"])

    api.delete_config(root["id"], "region:eu")
    api.delete_permission(child["id"], "billing.write")
    context = api.get_context(leaf["id"])
    assert "region:eu" not in context["resolved_config"]
    assert context["resolved_permissions"] == {}

    other = api.create_tenant("Other", slug())
    moved = api.move_tenant(child["id"], other["id"])
    assert moved["ancestry_path"] == f"/{other['id']}/{child['id']}"
    with pytest.raises(ConflictError) as cycle:
        api.move_tenant(other["id"], leaf["id"])
    assert cycle.value.code == "CYCLE_DETECTED"
    with pytest.raises(ConflictError) as busy:
        api.archive_tenant(child["id"])
    assert busy.value.code == "HAS_CHILDREN"
    assert api.archive_tenant(leaf["id"]) is None
    with pytest.raises(GoneError) as gone:
        api.get_tenant(leaf["id"])
    assert gone.value.code == "TENANT_ARCHIVED"
    assert api.restore_tenant(leaf["id"])["status"] == "active"
    with pytest.raises(NotFoundError) as missing:
        api.get_tenant(str(uuid.uuid4()))
    assert missing.value.code == "TENANT_NOT_FOUND"


def test_batch_update_and_pages(api: Client) -> None:
    root = api.create_tenant("Batch root", slug())
    result = api.create_tenants(
        [{"name": f"B{i}", "slug": slug(), "parent_id": root["id"]} for i in range(3)]
    )
    assert len(result["created"]) == 3
    assert result["errors"] == []
    renamed = api.update_tenant(root["id"], {"name": "Renamed", "metadata": {"tier": 1}})
    assert (renamed["name"], renamed["metadata"]) == ("Renamed", {"tier": 1})
    page = api.list_tenants(parent_id=root["id"], limit=2)
    assert len(page["data"]) == 2
    assert page["has_more"] is True
    rest = api.list_tenants(parent_id=root["id"], limit=2, cursor=page["next_cursor"])
    assert len(rest["data"]) == 1
    assert rest["has_more"] is False


def test_idempotency_key_replays_and_consistency_token(api: Client) -> None:
    name = slug()
    first = api.create_tenant("Once", name, idempotency_key=f"k-{name}")
    token = api.consistency_token
    assert token is not None
    assert api.last_response is not None
    assert api.last_response.consistency_token == token
    first_revision = api.last_response.revision
    assert isinstance(first_revision, int)
    api.put_config(first["id"], "plan", "pro")
    assert api.last_response is not None
    assert api.last_response.revision is not None
    assert api.last_response.revision > first_revision
    again = api.create_tenant("Once", name, idempotency_key=f"k-{name}")
    assert again == first
    assert api.last_response.headers.get("Idempotent-Replayed") == "true"
    assert api.get_tenant(first["id"], consistency_token=token)["id"] == first["id"]


def test_admin_operations(api: Client) -> None:
    root = api.create_tenant("Keys", slug())
    created = api.create_api_key("scoped", tenant_id=root["id"], scopes=["read"])
    assert created["plaintext_key"].startswith("sk_")
    assert created["tenant_id"] == root["id"]
    assert api.get_api_key(created["id"])["name"] == "scoped"
    scoped = Client(api.base_url, api_key=created["plaintext_key"])
    assert scoped.get_tenant(root["id"])["id"] == root["id"]
    outside = api.create_tenant("Outside", slug())
    with pytest.raises((PermissionDeniedError, NotFoundError)):
        scoped.get_tenant(outside["id"])
    api.revoke_api_key(created["id"])
    assert isinstance(api.list_webhooks(tenant_id=root["id"]), list)
    assert set(api.delivery_stats()) == {"total", "pending", "success", "failed"}
    entries = api.list_audit_logs(tenant_id=root["id"], limit=5)
    assert entries
    assert entries[0]["tenant_id"] == root["id"]
    assert api.raw("GET", f"/api/v1/tenants/{root['id']}")["id"] == root["id"]


def test_bearer_token(live: LiveApp) -> None:  # noqa: F811
    reader = Client(live.base, token=make_token(JWT_SECRET, scopes=["read"]))
    assert reader.list_tenants(limit=1)["data"] is not None
    with pytest.raises(PermissionDeniedError):
        reader.create_tenant("No", slug())


def test_rate_limit_refusal_carries_retry_after(api: Client) -> None:
    key = api.create_api_key(
        "limited", scopes=["read"], rate_limit_max=1, rate_limit_window="1 hour"
    )
    policy = RetryPolicy(max_retries=0)
    limited = Client(api.base_url, api_key=key["plaintext_key"], retry=policy)
    limited.list_tenants(limit=1)
    with pytest.raises(RateLimitedError) as refused:
        limited.list_tenants(limit=1)
    assert refused.value.status == 429
    assert refused.value.code == "RATE_LIMITED"
    assert refused.value.retry_after is not None
    assert refused.value.retry_after >= 1


def _scripted(answers: list[httpx.Response], seen: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    return httpx.MockTransport(handle)


def _refusal(status: int, code: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.Response(status, headers=headers, json={"error": {"code": code, "message": "x"}})


def test_retries_honour_retry_after_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", slept.append)
    seen: list[httpx.Request] = []
    answers = [
        _refusal(429, "RATE_LIMITED", {"Retry-After": "2"}),
        _refusal(503, "UNAVAILABLE", {"Retry-After": "999"}),
        _refusal(503, "UNAVAILABLE", {}),
        httpx.Response(201, json={"id": "t1"}),
    ]
    http = httpx.Client(transport=_scripted(answers, seen))
    policy = RetryPolicy(max_retries=3, backoff_base=0.5, max_retry_after=10)
    api = Client("http://service.test", api_key="k", http=http, retry=policy)
    assert api.create_tenant("A", "a")["id"] == "t1"
    assert slept[:2] == [2.0, 10.0]
    assert 1.0 <= slept[2] <= 2.0  # the third try: base x 2^2, half of it jitter
    keys = {request.headers["Idempotency-Key"] for request in seen}
    assert len(seen) == 4
    assert len(keys) == 1
    assert seen[0].headers["X-API-Key"] == "k"

    answers[:] = [_refusal(503, "UNAVAILABLE", {})] * 4
    with pytest.raises(ServiceUnavailableError) as unavailable:
        api.get_tenant("t1")
    assert unavailable.value.code == "UNAVAILABLE"
    assert len(seen) == 8


def test_patch_is_not_repeated_after_a_503(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module.time, "sleep", lambda _: None)
    seen: list[httpx.Request] = []
    answers = [_refusal(503, "UNAVAILABLE", {})]
    api = Client("http://service.test", http=httpx.Client(transport=_scripted(answers, seen)))
    with pytest.raises(ServiceUnavailableError):
        api.update_tenant("t1", {"name": "x"})
    assert len(seen) == 1


async def test_async_client(live: LiveApp) -> None:  # noqa: F811
    async with AsyncClient(live.base, api_key=issue_key(live)) as api:
        root = await api.create_tenant("Async", slug(), config={"flag": True})
        child = await api.create_tenant("Child", slug(), parent_id=root["id"])
        context = await api.get_context(child["id"])
        assert context["resolved_config"]["flag"]["value"] is True
        with pytest.raises(ConflictError) as cycle:
            await api.move_tenant(root["id"], child["id"])
        assert cycle.value.code == "CYCLE_DETECTED"
        assert api.last_response is not None
        assert api.last_response.status == 409


def test_async_operations_mirror_the_sync_ones() -> None:
    for source, target in mirror.PAIRS.items():
        text = (mirror.HERE / source).read_text()
        assert (mirror.HERE / target).read_text() == mirror.render(source, text), (
            f"{target} is stale: run python -m tenant_context._mirror"
        )
    sync = {n for n in dir(Client) if not n.startswith("_")} - {"close", "stream"}
    asynchronous = {n for n in dir(AsyncClient) if not n.startswith("_")} - {"aclose"}
    assert sync == asynchronous


def test_sse_parser() -> None:
    parser = Parser()
    lines = [": heartbeat", "id: 7:0", "event: context", 'data: {"a":', "data: 1}", ""]
    lines += ["retry: 250", "", "data: x", "id: 8:0", "", "event: reset", "data: {}", ""]
    events = [e for e in (parser.feed(line) for line in lines) if e is not None]
    assert events == [
        Event("context", '{"a":\n1}', "7:0"),
        Event("message", "x", "8:0"),
        Event("reset", "{}", "8:0"),
    ]
    assert (parser.comments, parser.last_comment, parser.retry_ms) == (1, "heartbeat", 250)


def test_package_files() -> None:
    root = Path(mirror.HERE)
    assert (root / "py.typed").exists()
    assert (root.parents[1] / "pyproject.toml").read_text().count('name = "tenant-context"') == 1


def test_read_your_writes_sends_the_latest_write_token() -> None:
    seen: list[httpx.Request] = []
    answers = [
        httpx.Response(200, json={"key": "plan"}, headers={"X-Consistency-Token": "w1"}),
        httpx.Response(200, json={"id": "t1"}, headers={"X-Consistency-Token": "r9"}),
        httpx.Response(200, json={"id": "t1"}),
    ]
    http = httpx.Client(transport=_scripted(answers, seen))
    api = Client("http://service.test", token="jwt", http=http, read_your_writes=True)
    api.put_config("t1", "plan", "pro")
    api.get_tenant("t1")
    api.get_tenant("t1")
    assert [r.headers.get("X-Consistency-Token") for r in seen] == [None, "w1", "w1"]
    assert seen[0].headers["Authorization"] == "Bearer jwt"
    assert "Idempotency-Key" not in seen[0].headers  # a PUT is idempotent by itself
    assert api.consistency_token == "w1"  # a read's token never replaces a write's


def test_hydration_and_batch_reads(api: Client) -> None:
    root = api.create_tenant("Bulk", slug(), config={"plan": "pro"})
    child = api.create_tenant("Child", slug(), parent_id=root["id"])
    contexts = api.subtree_contexts(root["id"])
    assert api.last_response is not None
    hydrated_at = api.last_response.revision
    assert isinstance(hydrated_at, int)
    by_id = {context["tenant_id"]: context for context in contexts}
    assert by_id == {t: api.get_context(t) for t in (root["id"], child["id"])}
    unknown = str(uuid.uuid4())
    batch = api.contexts_batch([child["id"], unknown])
    assert batch == {"contexts": [by_id[child["id"]]], "not_found": [unknown]}
    assert api.last_response.revision is not None
    assert api.last_response.revision >= hydrated_at
