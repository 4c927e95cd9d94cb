"""The console signs in with a provider's bearer token as it does with a key (issue 19).

api.js runs under Node (no browser needed): a JWT goes out as Authorization: Bearer,
a key as X-API-Key, never both; the header names the token's subject. Then the same
token signs in against the real service with a loopback provider.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from service.console.assets import STATIC_DIR
from tests.support.oidc import AUDIENCE, Provider

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

SCRIPT = """
const store = new Map();
globalThis.sessionStorage = {
  getItem: (k) => (store.has(k) ? store.get(k) : null),
  setItem: (k, v) => store.set(k, String(v)),
  removeItem: (k) => store.delete(k),
};
const sent = [];
globalThis.fetch = async (url, init) => {
  sent.push(init.headers);
  return new Response("{}", { status: 200, headers: { "Content-Type": "application/json" } });
};
const api = await import(process.argv[1]);
const out = [];
for (const credential of JSON.parse(process.argv[2])) {
  api.saveCredential(credential);
  await api.get("/tenants", { limit: 1 });
  const stored = api.loadCredential();
  out.push({ kind: stored.kind, label: api.identityLabel(stored), headers: sent.pop() });
}
console.log(JSON.stringify(out));
"""


def run_console(credentials: list[str]) -> list[dict[str, Any]]:
    assert NODE is not None
    result = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT, "--",
         (STATIC_DIR / "api.js").as_uri(), json.dumps(credentials)],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    answer: list[dict[str, Any]] = json.loads(result.stdout)
    return answer


@pytest.fixture
async def provider() -> AsyncIterator[Provider]:
    p = Provider()
    p.add("RSA", "rsa-1")
    await p.start()
    yield p
    await p.close()


@pytest.fixture
def settings_env(provider: Provider) -> dict[str, str]:
    return {"OIDC_ISSUER": provider.issuer, "JWT_AUDIENCE": AUDIENCE}


async def test_a_provider_token_signs_in_like_a_key(client: TestClient, provider: Provider) -> None:
    token = provider.token("rsa-1", sub="alice@example.com", scope="openid read")
    key = "sk_live_" + "A" * 40
    signed_in = run_console([token, f"Bearer {token}", key, "opaque-token"])
    accept = {"Accept": "application/json"}
    assert signed_in == [
        {
            "kind": "bearer",
            "label": f"Signed in as alice@example.com ({provider.issuer.removeprefix('http://')})",
            "headers": {**accept, "Authorization": f"Bearer {token}"},
        },
        {  # pasted with its scheme: the same token
            "kind": "bearer",
            "label": f"Signed in as alice@example.com ({provider.issuer.removeprefix('http://')})",
            "headers": {**accept, "Authorization": f"Bearer {token}"},
        },
        {
            "kind": "api_key",
            "label": "Signed in with an API key",
            "headers": {**accept, "X-API-Key": key},
        },
        {
            "kind": "bearer",
            "label": "Signed in with a bearer token",
            "headers": {**accept, "Authorization": "Bearer opaque-token"},
        },
    ]
    # What the console sends for the token, the service accepts.
    resp = await client.get("/api/v1/tenants?limit=1", headers=signed_in[0]["headers"])
    assert resp.status == 200
