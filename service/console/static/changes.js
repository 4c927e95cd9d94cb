// Change requests: compose one (title, changes as JSON, optional apply_at), see its
// impact, approve or reject, apply or cancel, and follow scheduled ones. Lists page with
// X-Next-Cursor; every value is shown as text.

import { get, post } from "./api.js";
import { badge, confirmButton, field, fill, h, jsonText, messageBox, table, when } from "./dom.js";

const STATES = ["", "draft", "pending_approval", "approved", "rejected", "cancelled", "applied", "failed"];
const EXAMPLE = '[\n  {"op": "config.set", "tenant_id": "…", "key": "limit", "value": 5000,\n   "expires_at": "2030-01-01T00:00:00Z"}\n]';

function utc(value) {
  if (!value) return undefined;
  return `${value.length === 16 ? `${value}:00` : value}Z`;
}

function impactTable(impact) {
  if (!impact.length) return h("p", {}, "No tenant's context changes.");
  const rows = impact.flatMap((entry) => [
    ...Object.entries(entry.config || {}).map(([key, change]) => ["config", key, change]),
    ...Object.entries(entry.permissions || {}).map(([key, change]) => ["permission", key, change]),
    ...(entry.ancestry_path ? [["position", "", entry.ancestry_path]] : []),
    ...(entry.status ? [["status", "", entry.status]] : []),
  ].map(([what, key, change]) => h("tr", {},
    h("td", {}, h("code", {}, entry.tenant_id)), h("td", {}, what), h("td", {}, key),
    h("td", {}, h("pre.json", {}, jsonText(change.before))),
    h("td", {}, h("pre.json", {}, jsonText(change.after))))));
  return table(["Tenant", "What", "Key", "Before", "After"], rows, "impact");
}

export async function changeRequestsPage(view, app) {
  const message = messageBox();
  const list = h("div.change-requests");
  const detail = h("div.change-request-detail");
  const state = h("select", { name: "state" }, STATES.map((s) => h("option", { value: s }, s || "any state")));
  const more = h("button", { type: "button", hidden: true }, "More");
  let cursor = null;

  async function load(append = false) {
    try {
      const answer = await get("/change-requests", { state: state.value || undefined, cursor: append ? cursor : undefined, limit: 25 });
      cursor = answer.headers.get("X-Next-Cursor");
      more.hidden = !cursor;
      const rows = answer.data.data.map((cr) => h("tr", {},
        h("td", {}, h("button.link", { type: "button", on: { click: () => show(cr.id) } }, cr.title)),
        h("td", {}, badge(cr.state)), h("td", {}, `${cr.approvals}/${cr.approvals_required}`),
        h("td", {}, when(cr.apply_at)), h("td", {}, when(cr.created_at))));
      if (append) list.querySelector("tbody").append(...rows);
      else fill(list, table(["Title", "State", "Approvals", "Applies at", "Created"], rows));
    } catch (err) {
      message.show(err.describe ? err.describe() : String(err), "error");
    }
  }

  async function act(id, verb, body) {
    try {
      await post(`/change-requests/${id}/${verb}`, body);
      app.notify(`Change request: ${verb} done.`);
    } catch (err) {
      const drift = err.body && err.body.drift ? ` ${jsonText(err.body.drift)}` : "";
      message.show(`${err.describe ? err.describe() : String(err)}${drift}`, "error");
    }
    await show(id);
    await load();
  }

  async function show(id) {
    try {
      const { data } = await get(`/change-requests/${id}`);
      const comment = h("input", { name: "comment", placeholder: "comment (optional)", autocomplete: "off" });
      const review = (verb) => () => act(id, verb, comment.value ? { comment: comment.value } : {});
      fill(detail, h("section.card", { "aria-labelledby": "cr-title" },
        h("h3", { id: "cr-title" }, data.title, " ", badge(data.state)),
        h("p", {}, data.description),
        h("dl.fields.compact", {}, [["Author", `${data.author.type}: ${data.author.id}`],
          ["Applies at", when(data.apply_at)], ["Digest", data.impact_digest],
          ["Revision", data.revision ?? "—"], ["Error", data.error ? data.error.message : "—"]]
          .map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])),
        h("h4", {}, "Changes"), h("pre.json", {}, jsonText(data.changes)),
        h("h4", {}, "Impact"), impactTable(data.impact),
        h("div.actions", {}, comment,
          h("button", { type: "button", on: { click: review("approve") } }, "Approve"),
          h("button", { type: "button", on: { click: review("reject") } }, "Reject"),
          confirmButton("Apply now", "Apply: sure?", () => act(id, "apply")),
          confirmButton("Cancel request", "Cancel: sure?", () => act(id, "cancel")))));
    } catch (err) {
      message.show(err.describe ? err.describe() : String(err), "error");
    }
  }

  const title = h("input", { name: "title", required: true, autocomplete: "off" });
  const changes = h("textarea", { name: "changes", rows: 6, spellcheck: "false", placeholder: EXAMPLE });
  const applyAt = h("input", { name: "apply_at", type: "datetime-local", step: "1" });
  const form = h("form", { on: { submit: async (event) => {
    event.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(changes.value);
    } catch {
      message.show("The changes must be a JSON list.", "error");
      return;
    }
    try {
      const { data } = await post("/change-requests", { title: title.value, changes: parsed, apply_at: utc(applyAt.value) });
      message.show(`Proposed: it affects ${data.impact.length} tenant(s).`, "success");
      await load();
      await show(data.id);
    } catch (err) {
      message.show(err.describe ? err.describe() : String(err), "error");
    }
  } } },
  field("Title", title), field("Changes", changes, "A JSON list of changes (docs/change-requests.md)."),
  field("Apply at (UTC, optional)", applyAt), h("button", { type: "submit" }, "Propose"));

  state.addEventListener("change", () => load());
  more.addEventListener("click", () => load(true));
  fill(view, h("h2", {}, "Change requests"), message,
    h("section.card", { "aria-labelledby": "cr-new" }, h("h3", { id: "cr-new" }, "New change request"), form),
    field("State", state), list, more, detail);
  await load();
}
