"""The stored tree as plain Python: parent chains, config entries and permission
policies read from the tables, and a reference resolution of a tenant's context
(docs/api.md, inheritance) computed from them, independent of the service's SQL."""

from __future__ import annotations

from typing import Any

from tests.support.live_app import LiveApp


class Facts:
    """The stored data the predictions and the reference resolution read."""

    def __init__(self, live: LiveApp) -> None:
        rows = live.fetch("SELECT id, parent_id, status FROM tenants")
        self.parent = {str(r["id"]): r["parent_id"] and str(r["parent_id"]) for r in rows}
        self.status = {str(r["id"]): r["status"] for r in rows}
        self.config: dict[str, dict[str, tuple[Any, bool]]] = {}
        for r in live.fetch("SELECT tenant_id, key, value, locked FROM config_entries"):
            self.config.setdefault(str(r["tenant_id"]), {})[r["key"]] = (r["value"], r["locked"])
        self.permissions: dict[str, dict[str, tuple[bool, str]]] = {}
        for r in live.fetch("SELECT tenant_id, key, value, mode FROM permission_policies"):
            entry = (r["value"], r["mode"])
            self.permissions.setdefault(str(r["tenant_id"]), {})[r["key"]] = entry

    def exists(self, tenant: str) -> bool:
        return tenant in self.parent

    def chain(self, tenant: str) -> list[str]:
        """Root first, the tenant last, by parent_id alone."""
        chain = [tenant]
        while (parent := self.parent[chain[-1]]) is not None:
            assert parent not in chain, "cycle"
            chain.append(parent)
        return chain[::-1]

    def depth(self, tenant: str) -> int:
        return len(self.chain(tenant)) - 1

    def children(self, tenant: str) -> list[str]:
        return [t for t, p in self.parent.items() if p == tenant]

    def subtree(self, tenant: str) -> list[str]:
        found, pending = [], [tenant]
        while pending:
            node = pending.pop()
            found.append(node)
            pending += self.children(node)
        return found

    def height(self, tenant: str) -> int:
        return max(self.depth(t) for t in self.subtree(tenant)) - self.depth(tenant)

    def locked_config_above(self, tenant: str, key: str) -> bool:
        return any(
            self.config.get(a, {}).get(key, (None, False))[1] for a in self.chain(tenant)[:-1]
        )

    def locked_permission_above(self, tenant: str, key: str) -> bool:
        return any(
            self.permissions.get(a, {}).get(key, (False, ""))[1] == "LOCKED"
            for a in self.chain(tenant)[:-1]
        )

    def context(self, tenant: str) -> dict[str, Any]:
        """As docs/api.md says, walking root to tenant: the topmost lock wins, else the
        nearest entry; LOCAL policies of ancestors do not apply."""
        chain = self.chain(tenant)
        config: dict[str, Any] = {}
        for key in {k for t in chain for k in self.config.get(t, {})}:
            holders = [t for t in chain if key in self.config.get(t, {})]
            locked = [t for t in holders if self.config[t][key][1]]
            source = locked[0] if locked else holders[-1]
            value, is_locked = self.config[source][key]
            config[key] = {"key": key, "value": value, "source_tenant_id": source,
                           "inherited": source != tenant, "locked": is_locked}  # fmt: skip
        permissions: dict[str, Any] = {}
        for key in {k for t in chain for k in self.permissions.get(t, {})}:
            holders = [
                t for t in chain
                if key in self.permissions.get(t, {})
                and (t == tenant or self.permissions[t][key][1] != "LOCAL")
            ]  # fmt: skip
            if not holders:
                continue
            locked = [t for t in holders if self.permissions[t][key][1] == "LOCKED"]
            source = locked[0] if locked else holders[-1]
            value, mode = self.permissions[source][key]
            permissions[key] = {"key": key, "value": value, "mode": mode,
                                "source_tenant_id": source, "locked": mode == "LOCKED",
                                "delegated": source != tenant and mode != "LOCKED"}  # fmt: skip
        return {"tenant_id": tenant, "depth": len(chain) - 1,
                "ancestry_path": "".join(f"/{t}" for t in chain),
                "resolved_config": config, "resolved_permissions": permissions}  # fmt: skip
