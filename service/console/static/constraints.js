// Constraints that apply to a tenant's config keys (value schemas and budgets, each with
// the tenant that declared it: the tenant itself or an ancestor), and a "who resolves
// to what" search over its subtree.

import { get, nameOf, remember } from "./api.js";
import { badge, fill, h, jsonText, messageBox, table } from "./dom.js";

const enc = encodeURIComponent;

function declaredBy(tenant, id) {
  return id === tenant.id ? "this tenant" : (nameOf(id) || id);
}

export function constraintsSection(tenant) {
  const body = h("div.entries");
  const message = messageBox();

  async function load() {
    try {
      const { data: ancestors } = await get(`/tenants/${tenant.id}/ancestors`);
      remember(ancestors);
      // Root first, then the tenant itself: the order in which schemas apply.
      const path = [...ancestors.map((a) => a.id), tenant.id];
      const rows = [];
      for (const id of path) {
        const [{ data: schemas }, { data: budgets }] = await Promise.all([
          get(`/tenants/${id}/config-schemas`), get(`/tenants/${id}/config-budgets`),
        ]);
        for (const s of schemas) {
          rows.push(h("tr", { dataset: { key: s.key, kind: "schema" } },
            h("th", { scope: "row" }, h("code", {}, s.key)),
            h("td", {}, badge("schema", "schema"), s.enforce ? null : badge("audit-only", "audit")),
            h("td", {}, h("code.value", {}, jsonText(s.schema))),
            h("td.declared-by", {}, declaredBy(tenant, id))));
        }
        for (const b of budgets) {
          const figures = b.capacity === null
            ? `children hold ${b.allocated}; no numeric value here`
            : `${b.allocated} of ${b.capacity} given to children, ${b.remaining} left`;
          rows.push(h("tr", { dataset: { key: b.key, kind: "budget" } },
            h("th", { scope: "row" }, h("code", {}, b.key)),
            h("td", {}, badge("budget", "budget")),
            h("td", {}, figures),
            h("td.declared-by", {}, declaredBy(tenant, id))));
        }
      }
      fill(body, rows.length
        ? table(["Key", "Kind", "Rule", "Declared by"], rows, "constraints-table")
        : h("p.empty", {}, "No value schemas or budgets apply here."));
    } catch (err) {
      fill(body, h("p.empty", {}, err.describe()));
    }
  }

  // Who resolves to what: the tenants of this subtree where a key resolves, optionally
  // to one value.
  const key = h("input", { name: "resolved-key", required: true, autocomplete: "off", placeholder: "e.g. plan" });
  const value = h("input", { name: "resolved-value", autocomplete: "off", placeholder: "JSON, e.g. \"eu\" (optional)" });
  const results = h("div.resolved-results", { role: "status", "aria-live": "polite" });

  async function search(event) {
    event.preventDefault();
    const query = { key: key.value.trim(), limit: 100 };
    if (value.value.trim()) {
      try {
        JSON.parse(value.value);
      } catch {
        message.show("The value must be JSON: text goes in double quotes, e.g. \"eu\".", "error");
        return;
      }
      query.value = value.value.trim();
    }
    try {
      const { data, headers } = await get(`/tenants/${tenant.id}/resolved`, query);
      message.clear();
      const rows = data.map((r) => h("tr", { dataset: { tenantId: r.tenant_id } },
        h("th", { scope: "row" }, h("a", { href: `#/tenants/${enc(r.tenant_id)}` }, nameOf(r.tenant_id) || r.tenant_id)),
        h("td", {}, h("code.value", {}, jsonText(r.value))),
        h("td", {}, r.inherited ? `from ${declaredBy(tenant, r.source_tenant_id)}` : "set here",
          r.locked ? badge("locked", "locked") : null)));
      fill(results,
        h("p", {}, `${data.length}${headers.get("X-Next-Cursor") ? "+" : ""} tenant${data.length === 1 ? "" : "s"}`),
        rows.length ? table(["Tenant", "Value", "Source"], rows, "resolved-table") : null);
    } catch (err) {
      message.show(`Cannot search: ${err.describe()}`, "error");
    }
  }

  const form = h("form.entry-form", { "aria-label": "Who resolves to what", on: { submit: search } },
    h("label.field", {}, h("span.label", {}, "Key"), key),
    h("label.field.grow", {}, h("span.label", {}, "Value (JSON, optional)"), value),
    h("button", { type: "submit" }, "Search subtree"));
  const section = h("section.card", { "aria-labelledby": "constraints-title" },
    h("h3", { id: "constraints-title" }, "Constraints and who resolves to what"),
    body, form, results, message);
  load();
  return section;
}
