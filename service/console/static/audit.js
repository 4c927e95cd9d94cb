// The audit log: filters (tenant, action, resource type, actor, time range), newest
// first, cursor paging (the answer is an array; X-Next-Cursor carries the next cursor),
// and one entry's changes on request.

import { get, learnNames } from "./api.js";
import { field, fill, h, jsonText, messageBox, table, tenantRef, when } from "./dom.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// API-key names by id, for the actor column (the audit log records key ids). Looked up
// once per key; a key that cannot be read (purged, outside the caller's subtree) keeps
// showing its id.
const keyNames = new Map();
async function learnKeyNames(entries) {
  const unknown = [...new Set(entries.filter((e) => e.actor_type === "api_key" && UUID.test(e.actor_id))
    .map((e) => e.actor_id))].filter((id) => !keyNames.has(id));
  await Promise.all(unknown.map(async (id) => {
    try {
      keyNames.set(id, (await get(`/api-keys/${id}`)).data.name);
    } catch {
      keyNames.set(id, null);
    }
  }));
}

function actorCell(entry) {
  const name = entry.actor_type === "api_key" ? keyNames.get(entry.actor_id) : null;
  return name
    ? h("td", {}, "key ", h("strong.actor-name", { title: `API key ${entry.actor_id}` }, name))
    : h("td", {}, `${entry.actor_type}: `, h("code", {}, entry.actor_id));
}

// A datetime-local value, read as UTC, in the API's ISO 8601 form.
function utc(value) {
  if (!value) return undefined;
  const withSeconds = value.length === 16 ? `${value}:00` : value;
  return `${withSeconds}Z`;
}

// A tenant by name and slug; another resource by its whole id, in a field it can be
// copied from (a shortened id names nothing: ids of one minute share their start).
function resourceCell(entry) {
  if (!entry.resource_id) return "";
  if (entry.resource_type === "tenant") return tenantRef(entry.resource_id);
  return h("input.id-copy", {
    type: "text", readonly: true, value: entry.resource_id, title: entry.resource_id,
    "aria-label": `${entry.resource_type} id`, size: "36",
  });
}

export async function auditPage(view, app, preset = {}) {
  const message = messageBox();
  const results = h("div.audit-results");
  const pager = h("div.pager");
  const detail = h("div.audit-detail");
  const inputs = {
    tenant_id: h("input", { name: "tenant_id", placeholder: "tenant UUID", value: preset.tenant_id || "", autocomplete: "off" }),
    action: h("input", { name: "action", placeholder: "e.g. tenant.moved", autocomplete: "off" }),
    resource_type: h("input", { name: "resource_type", placeholder: "e.g. tenant, config_entry", autocomplete: "off" }),
    actor_id: h("input", { name: "actor_id", placeholder: "API key id or JWT sub", autocomplete: "off" }),
    from: h("input", { name: "from", type: "datetime-local", step: "1" }),
    to: h("input", { name: "to", type: "datetime-local", step: "1" }),
    limit: h("select", { name: "limit" }, ["25", "50", "100"].map((n) => h("option", { value: n, selected: n === "50" }, n))),
  };
  let cursors = [null];
  let filters = {};

  function readFilters() {
    const tenant = inputs.tenant_id.value.trim();
    if (tenant && !UUID.test(tenant)) {
      message.show("The tenant filter must be a tenant id (UUID).", "error");
      return null;
    }
    return {
      tenant_id: tenant || undefined,
      action: inputs.action.value.trim() || undefined,
      resource_type: inputs.resource_type.value.trim() || undefined,
      actor_id: inputs.actor_id.value.trim() || undefined,
      from: utc(inputs.from.value),
      to: utc(inputs.to.value),
      limit: inputs.limit.value,
    };
  }

  async function showEntry(id) {
    try {
      const { data } = await get(`/audit-logs/${id}`);
      fill(detail, h("section.card", { "aria-labelledby": "audit-entry-title" },
        h("h3", { id: "audit-entry-title" }, `${data.action} — ${when(data.created_at)}`),
        h("dl.fields.compact", {},
          [["Entry", data.id],
            ["Actor", `${data.actor_type}: ${data.actor_id}${keyNames.get(data.actor_id) ? ` (${keyNames.get(data.actor_id)})` : ""}`],
            ["Resource", `${data.resource_type} ${data.resource_id ?? ""}`],
            ["Request", data.request_id ?? "—"], ["Address", data.ip_address ?? "—"]]
            .map(([label, value]) => [h("dt", {}, label), h("dd", {}, h("code", {}, value))])),
        h("h4", {}, "Changes"),
        h("pre.payload", {}, jsonText(data.changes))));
      detail.scrollIntoView({ block: "nearest" });
    } catch (err) {
      fill(detail, h("p.message.error", {}, err.describe()));
    }
  }

  async function load(page) {
    message.clear();
    fill(detail);
    results.setAttribute("aria-busy", "true"); // set before the first await: tests wait on it
    try {
      const { data, headers } = await get("/audit-logs", { ...filters, cursor: cursors[page] });
      cursors = cursors.slice(0, page + 1);
      const next = headers.get("X-Next-Cursor");
      await learnKeyNames(data);
      await learnNames(data.flatMap((entry) => [
        entry.tenant_id, entry.resource_type === "tenant" ? entry.resource_id : null]));
      fill(results, data.length
        ? table(["When", "Action", "Resource", "Tenant", "Actor", ""], data.map((entry) =>
          h("tr", { dataset: { auditId: entry.id } },
            h("td", {}, when(entry.created_at)),
            h("td", {}, h("code", {}, entry.action)),
            h("td", {}, entry.resource_type, " ", resourceCell(entry)),
            h("td", {}, entry.tenant_id ? tenantRef(entry.tenant_id) : "—"),
            actorCell(entry),
            h("td.actions", {}, h("button.link", { type: "button", on: { click: () => showEntry(entry.id) } }, "Changes")))),
        "audit-table")
        : h("p.empty", {}, "No audit entries match these filters."));
      fill(pager,
        page > 0 ? h("button.secondary", { type: "button", on: { click: () => load(0) } }, "First page") : null,
        page > 0 ? h("button.secondary", { type: "button", on: { click: () => load(page - 1) } }, "Previous page") : null,
        h("span.page-number", {}, `Page ${page + 1}`),
        next ? h("button.secondary", {
          type: "button", on: { click: () => { cursors.push(next); load(page + 1); } },
        }, "Next page") : null);
    } catch (err) {
      fill(pager);
      if (err.code === "NOT_FOUND") {
        fill(results, h("p.message.error", {}, "This server has no audit-log API (GET /api/v1/audit-logs)."));
      } else if (err.code === "INSUFFICIENT_SCOPE") {
        fill(results, h("p.message.error", {}, `The audit log needs the read and admin scopes: ${err.describe()}`));
      } else {
        fill(results, h("p.message.error", {}, err.describe()));
      }
    } finally {
      results.setAttribute("aria-busy", "false");
    }
  }

  const form = h("form.filters", {
    "aria-label": "Audit log filters",
    on: {
      submit: (event) => {
        event.preventDefault();
        const read = readFilters();
        if (!read) return;
        filters = read;
        cursors = [null];
        load(0);
      },
    },
  },
  field("Tenant", inputs.tenant_id),
  field("Action", inputs.action),
  field("Resource type", inputs.resource_type),
  field("Actor", inputs.actor_id),
  field("From (UTC)", inputs.from),
  field("To (UTC)", inputs.to),
  field("Per page", inputs.limit),
  h("button", { type: "submit" }, "Apply filters"));

  fill(view, h("header.page-head", {}, h("h2", {}, "Audit log")), form, message, results, pager, detail);
  filters = readFilters() || {};
  await load(0);
}
