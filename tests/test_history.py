"""History of the resolved view (migration 0044, docs/history.md): as-of reads by time
and by revision answer what GET /context and GET /tenants/{id} answered then, diffs
name the revision that caused each difference, scoped keys see their subtree only, and
purge-expired forgets the history past HISTORY_RETENTION_DAYS."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from tests.support.api import create_tenant, get_json
from tests.support.keys import key_headers

KEYS = ("theme", "limit", "region")
PERMS = ("export", "billing")
# Expiries far enough ahead that none passes during a test: setting an entry again with
# another one (or none) is a change of expiry alone.
EXPIRIES = (None, None, "2100-01-01T00:00:00Z", "2100-06-01T12:30:00.250Z")


@pytest.fixture
def db_url(fresh_db_url: str) -> str:
    """Revisions are counted from the first: a database of each test's own."""
    return fresh_db_url


def _instant(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Recorder:
    """Every tenant's GET /context and GET /tenants/{id} after each step."""

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers
        self.tenants: list[str] = []
        self.steps: list[tuple[int, dict[str, tuple[int, Any]]]] = []

    async def answers(self, query: str = "") -> dict[str, tuple[int, Any]]:
        seen: dict[str, tuple[int, Any]] = {}
        for tid in self.tenants:
            for what, path in (("context", f"{tid}/context"), ("tenant", tid)):
                sep = "&" if "?" in path else "?"
                extra = f"{sep}{query}" if query else ""
                if what == "tenant":
                    extra = f"?include_archived=true{'&' + query if query else ''}"
                resp = await self.client.get(f"/api/v1/tenants/{path}{extra}", headers=self.headers)
                body = await resp.json()
                if resp.status >= 400:
                    body = body["error"]["code"]
                seen[f"{what} {tid}"] = (resp.status, body)
        return seen

    async def record(self, revision: int) -> None:
        self.steps.append((revision, await self.answers()))


async def _write(client: Any, headers: dict[str, str], method: str, path: str, **kw: Any) -> int:
    """The write's revision (0: refused, nothing changed)."""
    resp = await client.request(method, path, headers=headers, **kw)
    await resp.read()
    if resp.status >= 400:
        assert resp.status in (404, 409, 410, 422), (method, path, resp.status)
        return 0
    return int(resp.headers["X-Revision"])


async def _random_step(rng: random.Random, client: Any, h: dict[str, str], rec: Recorder) -> int:
    tid = rng.choice(rec.tenants)
    kind = rng.choice(["config", "config", "lock", "delete", "permission", "move", "archive"])
    base = f"/api/v1/tenants/{tid}"
    if kind in ("config", "lock"):
        key = rng.choice(KEYS)
        body = {"value": rng.randint(0, 3), "locked": kind == "lock" and rng.random() < 0.7}
        if expiry := rng.choice(EXPIRIES):
            body["expires_at"] = expiry
        return await _write(client, h, "PUT", f"{base}/config/{key}", json=body)
    if kind == "delete":
        return await _write(client, h, "DELETE", f"{base}/config/{rng.choice(KEYS)}")
    if kind == "permission":
        body = {"value": rng.random() < 0.5, "mode": rng.choice(["INHERIT", "LOCKED", "LOCAL"])}
        if expiry := rng.choice(EXPIRIES):
            body["expires_at"] = expiry
        return await _write(client, h, "PUT", f"{base}/permissions/{rng.choice(PERMS)}", json=body)
    if kind == "move":
        parent = rng.choice([None, *rec.tenants])
        return await _write(client, h, "POST", f"{base}/move", json={"new_parent_id": parent})
    # archive, or restore when it is archived
    tenant = await get_json(client, f"{base}?include_archived=true", h)
    if tenant["status"] == "archived":
        return await _write(client, h, "POST", f"{base}/restore")
    return await _write(client, h, "DELETE", base)


async def _committed_at(db_conn: Any, revision: int) -> datetime:
    at: datetime = await db_conn.fetchval(
        "SELECT committed_at FROM history_revisions WHERE revision = $1", revision
    )
    return at


@pytest.mark.parametrize("seed", [1, 2])
async def test_as_of_answers_what_was_answered_then(client, admin, db_conn, seed: int) -> None:
    rng = random.Random(seed)
    rec = Recorder(client, admin)
    root = await create_tenant(client, admin)
    rec.tenants.append(root["id"])
    for _ in range(4):
        child = await create_tenant(client, admin, parent_id=rng.choice(rec.tenants))
        rec.tenants.append(child["id"])
    first = int(await db_conn.fetchval("SELECT max(revision) FROM context_revisions"))
    await rec.record(first)
    for _ in range(30):
        revision = await _random_step(rng, client, admin, rec)
        if revision:
            await rec.record(revision)
    assert len(rec.steps) > 15

    # By revision, and by the commit time of each revision.
    for revision, answers in rec.steps:
        assert await rec.answers(f"revision={revision}") == answers, revision
        at = await _committed_at(db_conn, revision)
        assert await rec.answers(f"as_of={_instant(at)}") == answers, revision
    # Boundaries: one microsecond before a commit names the revision before it.
    for (prior, earlier), (revision, _) in zip(rec.steps, rec.steps[1:], strict=False):
        if prior == revision:  # a write that changed nothing
            continue
        before = await _committed_at(db_conn, prior)
        at = await _committed_at(db_conn, revision)
        if before < at - timedelta(microseconds=1):
            just_before = _instant(at - timedelta(microseconds=1))
            assert await rec.answers(f"as_of={just_before}") == earlier, revision

    # Diffs between steps: the differences of the recorded answers, each naming a
    # revision in the range after which the key shows its final state and before which
    # it did not.
    pairs = [(rng.randrange(len(rec.steps)), rng.randrange(len(rec.steps))) for _ in range(8)]
    for i, j in pairs:
        (a, old), (b, new) = sorted([rec.steps[i], rec.steps[j]], key=lambda s: s[0])
        for tid in rec.tenants:
            s_old, c_old = old[f"context {tid}"]
            s_new, c_new = new[f"context {tid}"]
            resp = await client.get(
                f"/api/v1/tenants/{tid}/context/diff?from={a}&to={b}", headers=admin
            )
            diff = await resp.json()
            if s_old != 200 or s_new != 200:
                assert resp.status in (404, 410), diff
                continue
            assert resp.status == 200, diff
            assert (diff["from"], diff["to"]) == (a, b)
            for part, field in (
                ("config", "resolved_config"),
                ("permissions", "resolved_permissions"),
            ):
                was, now = c_old[field], c_new[field]
                expected = {k for k in was.keys() | now.keys() if was.get(k) != now.get(k)}
                assert {d["key"] for d in diff[part]} == expected
                for d in diff[part]:
                    assert d["before"] == was.get(d["key"])
                    assert d["after"] == now.get(d["key"])
                    assert d["change"] == (
                        "added"
                        if d["before"] is None
                        else "removed"
                        if d["after"] is None
                        else "changed"
                    )
                    r = d["revision"]
                    assert a < r <= b
                    at_r = await get_json(
                        client, f"/api/v1/tenants/{tid}/context?revision={r}", admin
                    )
                    assert at_r[field].get(d["key"]) == d["after"]
                    resp = await client.get(
                        f"/api/v1/tenants/{tid}/context?revision={r - 1}", headers=admin
                    )
                    if resp.status == 200:
                        assert (await resp.json())[field].get(d["key"]) != d["after"]
                    audit = await db_conn.fetchval(
                        "SELECT audit_ids FROM history_revisions WHERE revision = $1", r
                    )
                    assert d["audit_id"] == str(audit[0])


async def test_errors_before_history_and_for_unknown_moments(client, admin, db_conn) -> None:
    root = await create_tenant(client, admin)
    base = f"/api/v1/tenants/{root['id']}/context"
    since = await db_conn.fetchval("SELECT kept_since FROM history_horizon")
    old = _instant(since - timedelta(seconds=1))
    resp = await client.get(f"{base}?as_of={old}", headers=admin)
    assert resp.status == 410
    assert (await resp.json())["error"]["code"] == "HISTORY_UNAVAILABLE"
    # Before the tenant existed: 404, as GET /context answers an unknown id.
    kept_from = await db_conn.fetchval("SELECT kept_from FROM history_horizon")
    resp = await client.get(f"{base}?revision={kept_from}", headers=admin)
    assert resp.status == 404
    assert (await resp.json())["error"]["code"] == "TENANT_NOT_FOUND"
    for query in (
        "revision=999999",
        "as_of=2999-01-01T00:00:00Z",
        "as_of=yesterday",
        "as_of=2026-01-01T00:00:00Z&revision=1",
        "revision=1&reveal=true",
        "revision=-1",
    ):
        resp = await client.get(f"{base}?{query}", headers=admin)
        assert resp.status == 400, query
        assert (await resp.json())["error"]["code"] == "VALIDATION_ERROR"
    for query in ("from=1", "from=x&to=1", "from=3&to=1"):
        resp = await client.get(f"{base}/diff?{query}", headers=admin)
        assert resp.status == 400, query


async def test_scoped_keys_see_their_subtree_history_only(client, admin) -> None:
    root = await create_tenant(client, admin)
    a = await create_tenant(client, admin, parent_id=root["id"])
    b = await create_tenant(client, admin, parent_id=root["id"])
    leaf = await create_tenant(client, admin, parent_id=b["id"])
    r_in_b = await _write(
        client, admin, "PUT", f"/api/v1/tenants/{leaf['id']}/config/theme",
        json={"value": "dark", "sensitive": True},
    )  # fmt: skip
    moved = await _write(
        client, admin, "POST", f"/api/v1/tenants/{leaf['id']}/move",
        json={"new_parent_id": a["id"]},
    )  # fmt: skip
    scoped_a = await key_headers(client.app, ("read",), tenant_id=a["id"])
    leaf_ctx = f"/api/v1/tenants/{leaf['id']}/context"
    # Before the move the leaf lay under B: outside A's subtree then.
    resp = await client.get(f"{leaf_ctx}?revision={r_in_b}", headers=scoped_a)
    assert resp.status == 404
    after = await get_json(client, f"{leaf_ctx}?revision={moved}", scoped_a)
    assert after == await get_json(client, leaf_ctx, scoped_a)
    assert after["resolved_config"]["theme"]["value"] == "***"
    resp = await client.get(f"{leaf_ctx}/diff?from={r_in_b}&to={moved}", headers=scoped_a)
    assert resp.status == 404
    # The ancestors then: only the part inside the caller's subtree.
    chain = await get_json(
        client, f"/api/v1/tenants/{leaf['id']}/ancestors?revision={moved}", scoped_a
    )
    assert [t["id"] for t in chain] == [a["id"]]
    chain = await get_json(
        client, f"/api/v1/tenants/{leaf['id']}/ancestors?revision={r_in_b}", admin
    )
    assert [t["id"] for t in chain] == [root["id"], b["id"]]
    assert await get_json(
        client, f"/api/v1/tenants/{leaf['id']}/ancestors?revision={moved}", admin
    ) == await get_json(client, f"/api/v1/tenants/{leaf['id']}/ancestors", admin)


async def test_purge_expired_forgets_history_past_retention(client, admin, db_conn) -> None:
    root = await create_tenant(client, admin)
    cfg = f"/api/v1/tenants/{root['id']}/config/theme"
    old = await _write(client, admin, "PUT", cfg, json={"value": "a"})
    middle = await _write(client, admin, "PUT", cfg, json={"value": "b"})
    newest = await _write(client, admin, "PUT", cfg, json={"value": "c"})
    # Age the first two revisions past the 90 days kept.
    await db_conn.execute(
        "UPDATE history_revisions SET committed_at = committed_at - interval '100 days'"
        " WHERE revision <= $1",
        middle,
    )
    dry = await client.post(
        "/api/v1/maintenance/purge-expired", json={"dry_run": True}, headers=admin
    )
    counted = (await dry.json())["context_history"]
    resp = await client.post("/api/v1/maintenance/purge-expired", headers=admin)
    body = await resp.json()
    assert resp.status == 200, body
    assert body["context_history"] == counted > 0
    assert await db_conn.fetchval("SELECT kept_from FROM history_horizon") == middle
    base = f"/api/v1/tenants/{root['id']}/context"
    resp = await client.get(f"{base}?revision={old}", headers=admin)
    assert (resp.status, (await resp.json())["error"]["code"]) == (410, "HISTORY_UNAVAILABLE")
    at_middle = await get_json(client, f"{base}?revision={middle}", admin)
    assert at_middle["resolved_config"]["theme"]["value"] == "b"
    at_newest = await get_json(client, f"{base}?revision={newest}", admin)
    assert at_newest["resolved_config"]["theme"]["value"] == "c"
    # Versions no kept revision can see are gone; the purge is audited.
    assert (
        await db_conn.fetchval("SELECT count(*) FROM config_history WHERE valid_to <= $1", middle)
        == 0
    )
    audited = await db_conn.fetchval(
        "SELECT changes FROM audit_logs WHERE action = 'maintenance.purge_expired'"
        " ORDER BY created_at DESC LIMIT 1"
    )
    assert audited is not None
    assert "'context_history': " + str(counted) in str(audited)


async def _revert(client: Any, h: dict[str, str], revision: int, query: str = "", **body: Any):
    resp = await client.post(
        f"/api/v1/revisions/{revision}/revert{query}", json=body or None, headers=h
    )
    return resp.status, await resp.json(), resp.headers.get("X-Revision")


async def test_revert_restores_the_earlier_answer_and_refuses_conflicts(
    client, admin, db_conn
) -> None:
    root = await create_tenant(client, admin)
    child = await create_tenant(client, admin, parent_id=root["id"])
    other = await create_tenant(client, admin)
    cfg = f"/api/v1/tenants/{root['id']}/config"
    ctx = f"/api/v1/tenants/{child['id']}/context"
    await _write(client, admin, "PUT", f"{cfg}/theme", json={"value": "a"})
    recorded = await get_json(client, ctx, admin)
    # Revision n: a lock and a new permission at the root.
    await _write(client, admin, "PUT", f"{cfg}/theme", json={"value": "b", "locked": True})
    n = await _write(
        client, admin, "PUT", f"/api/v1/tenants/{child['id']}/config/secret",
        json={"value": "mine", "sensitive": True},
    )  # fmt: skip
    assert n > 0
    await _write(client, admin, "PUT", f"/api/v1/tenants/{other['id']}/config/x", json={"value": 1})
    assert (await get_json(client, ctx, admin)) != recorded

    status, dry, _ = await _revert(client, admin, n, "?dry_run=true")
    assert status == 200, dry
    assert dry == {
        "revision": n,
        "dry_run": True,
        "changes": [
            {
                "kind": "config", "tenant_id": child["id"], "key": "secret", "restored": None,
                "reverted": {"value": "***", "locked": False, "sensitive": True,
                             "reveal_to_descendants": False},
                "later_revisions": [],
            }
        ],
    }  # fmt: skip
    lock_revision = n - 1
    status, done, new_revision = await _revert(client, admin, lock_revision)
    # Revision n changed another key: no conflict; the lock is undone.
    assert status == 200, done
    assert int(new_revision) > n + 1
    theme = (await get_json(client, ctx, admin))["resolved_config"]["theme"]
    assert (theme["value"], theme["locked"]) == ("a", False)
    status, done, _ = await _revert(client, admin, n)
    assert status == 200, done
    assert await get_json(client, ctx, admin) == recorded
    # Its own audit entry.
    audited = await db_conn.fetchval(
        "SELECT count(*) FROM audit_logs WHERE action = 'revision.reverted'"
    )
    assert audited == 2

    # A later revision changed the same key at the same tenant: 409 naming it.
    first = await _write(client, admin, "PUT", f"{cfg}/theme", json={"value": "c"})
    later = await _write(client, admin, "PUT", f"{cfg}/theme", json={"value": "d"})
    status, refused, _ = await _revert(client, admin, first)
    assert status == 409
    assert refused["error"]["code"] == "REVERT_CONFLICT"
    assert refused["error"]["details"] == [
        {"field": f"config:{root['id']}:theme", "message": f"changed later by revision {later}"}
    ]
    status, forced, _ = await _revert(client, admin, first, force=True)
    assert status == 200, forced
    assert (await get_json(client, ctx, admin)) == recorded

    # A later move of a tenant whose entry the revision changed conflicts too.
    own = await _write(
        client, admin, "PUT", f"/api/v1/tenants/{child['id']}/config/mode", json={"value": 1}
    )
    moved = await _write(
        client, admin, "POST", f"/api/v1/tenants/{child['id']}/move",
        json={"new_parent_id": other["id"]},
    )  # fmt: skip
    status, refused, _ = await _revert(client, admin, own)
    assert status == 409
    assert refused["error"]["details"] == [
        {"field": f"tenant:{child['id']}", "message": f"moved later by revision {moved}"}
    ]

    # Tenants created in a revision are not reverted; scoped keys revert inside only.
    created = await create_tenant(client, admin, parent_id=root["id"])
    created_rev = await db_conn.fetchval(
        "SELECT max(valid_from) FROM tenant_history WHERE tenant_id = $1", UUID(created["id"])
    )
    status, body, _ = await _revert(client, admin, created_rev)
    assert (status, body["error"]["code"]) == (422, "REVERT_UNSUPPORTED")
    scoped = await key_headers(client.app, ("read", "write"), tenant_id=child["id"])
    status, body, _ = await _revert(client, scoped, later)
    assert (status, body["error"]["code"]) == (403, "TENANT_ACCESS_DENIED")
    status, body, _ = await _revert(client, admin, 10**9)
    assert (status, body["error"]["code"]) == (400, "VALIDATION_ERROR")
