// Change requests: compose one from the changes the tenant page's forms added to the
// draft (or as JSON, for the advanced), see its impact, approve or reject, apply or
// cancel, and follow scheduled ones. Lists page with X-Next-Cursor; every value is shown
// as text.

import { get, learnNames, post } from "./api.js";
import { badge, confirmButton, field, fill, h, jsonText, messageBox, table, tenantRef, when } from "./dom.js";
import { clearDraft, draftChanges, onDraftChange, removeChange, timeLeft, utcInstant } from "./draft.js";

const STATES = ["", "draft", "pending_approval", "approved", "rejected", "cancelled", "applied", "failed"];
const EXAMPLE = '[\n  {"op": "config.set", "tenant_id": "…", "key": "limit", "value": 5000,\n   "expires_at": "2030-01-01T00:00:00Z"}\n]';

// One change in words: "config.set theme = "dark" (locked) at Acme (acme)".
function describeChange(change) {
  const what = {
    "config.set": () => `${change.key} = ${JSON.stringify(change.value)}${change.locked ? " (locked)" : ""}${change.sensitive ? " (sensitive)" : ""}`,
    "config.delete": () => change.key,
    "permission.set": () => `${change.key} = ${change.value} (${change.mode || "INHERIT"})`,
    "permission.delete": () => change.key,
    "tenant.move": () => null,
    "tenant.update": () => JSON.stringify(Object.fromEntries(Object.entries(change)
      .filter(([k]) => k !== "op" && k !== "tenant_id"))),
  }[change.op];
  const text = what ? what() : null;
  return [h("code", {}, change.op), text ? ` ${text}` : "", " at ", tenantRef(change.tenant_id),
    change.op === "tenant.move" ? [" under ", change.new_parent_id ? tenantRef(change.new_parent_id) : "the top level"] : null,
    change.expires_at ? [" ", h("span.badge.expires", {}, `expires ${when(change.expires_at)}`)] : null];
}

const tenantsOf = (changes) => changes.flatMap((c) => [c.tenant_id, c.new_parent_id]);

function impactTable(impact) {
  if (!impact.length) return h("p", {}, "No tenant's context changes.");
  const rows = impact.flatMap((entry) => [
    ...Object.entries(entry.config || {}).map(([key, change]) => ["config", key, change]),
    ...Object.entries(entry.permissions || {}).map(([key, change]) => ["permission", key, change]),
    ...(entry.ancestry_path ? [["position", "", entry.ancestry_path]] : []),
    ...(entry.status ? [["status", "", entry.status]] : []),
  ].map(([what, key, change]) => h("tr", {},
    h("td", {}, tenantRef(entry.tenant_id)), h("td", {}, what), h("td", {}, key),
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
    await Promise.all([load(), loadScheduled()]);
  }

  async function show(id) {
    try {
      const { data } = await get(`/change-requests/${id}`);
      await learnNames([...tenantsOf(data.changes), ...data.impact.map((e) => e.tenant_id)]);
      const comment = h("input", { name: "comment", placeholder: "comment (optional)", autocomplete: "off" });
      const review = (verb) => () => act(id, verb, comment.value ? { comment: comment.value } : {});
      fill(detail, h("section.card", { "aria-labelledby": "cr-title" },
        h("h3", { id: "cr-title" }, data.title, " ", badge(data.state)),
        h("p", {}, data.description),
        h("dl.fields.compact", {}, [["Author", `${data.author.type}: ${data.author.id}`],
          ["Applies at", when(data.apply_at)], ["Digest", data.impact_digest],
          ["Revision", data.revision ?? "—"], ["Error", data.error ? data.error.message : "—"]]
          .map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])),
        h("h4", {}, "Changes"), h("ol.change-list", {}, data.changes.map((c) => h("li", {}, describeChange(c)))),
        h("h4", {}, "Impact"), impactTable(data.impact),
        h("div.actions", {},
          data.state === "draft" ? h("button", { type: "button", on: { click: () => act(id, "submit") } }, "Submit for review") : null,
          comment,
          h("button", { type: "button", on: { click: review("approve") } }, "Approve"),
          h("button", { type: "button", on: { click: review("reject") } }, "Reject"),
          confirmButton("Apply now", "Apply: sure?", () => act(id, "apply")),
          confirmButton("Cancel request", "Cancel: sure?", () => act(id, "cancel")))));
    } catch (err) {
      message.show(err.describe ? err.describe() : String(err), "error");
    }
  }

  // Compose: the draft's changes (added from the tenant page), or JSON (advanced).
  const draftList = h("div.draft-changes");
  const title = h("input", { name: "title", required: true, autocomplete: "off", maxlength: "200" });
  const description = h("textarea", { name: "description", rows: 2 });
  const applyAt = h("input", { name: "apply_at", type: "datetime-local", step: "1" });
  const changes = h("textarea", { name: "changes", rows: 6, spellcheck: "false", placeholder: EXAMPLE });
  const useJson = h("details.advanced", {},
    h("summary", {}, "Advanced: write the changes as JSON instead"),
    field("Changes (JSON)", changes, "A JSON list of changes (docs/change-requests.md); used instead of the draft when filled."));

  async function showDraft() {
    const drafted = draftChanges();
    await learnNames(tenantsOf(drafted));
    fill(draftList, drafted.length
      ? h("ol.change-list", {}, drafted.map((change, i) => h("li", { dataset: { index: String(i) } },
        describeChange(change), " ",
        h("button.link", { type: "button", on: { click: () => removeChange(i) } }, "Remove"))))
      : h("p.empty", {}, "No changes yet: use “Add to change request” on a tenant's config, permission, edit, move or archive forms, or write them as JSON below."));
  }

  async function propose(asDraft) {
    let list = draftChanges();
    const fromJson = changes.value.trim() !== "";
    if (fromJson) {
      try {
        list = JSON.parse(changes.value);
      } catch {
        message.show("The changes must be a JSON list.", "error");
        return;
      }
    }
    if (!title.value.trim()) {
      message.show("Give the request a title.", "error");
      return;
    }
    if (Array.isArray(list) && !list.length) {
      message.show("The request has no changes yet.", "error");
      return;
    }
    try {
      const { data } = await post("/change-requests", {
        title: title.value.trim(), description: description.value || undefined, changes: list,
        apply_at: utcInstant(applyAt.value), draft: asDraft || undefined,
      });
      message.show(`${asDraft ? "Saved as a draft" : "Submitted for review"}: it affects ${data.impact.length} tenant(s).`, "success");
      if (fromJson) changes.value = "";
      else clearDraft();
      title.value = "";
      description.value = "";
      applyAt.value = "";
      await Promise.all([load(), loadScheduled()]);
      await show(data.id);
    } catch (err) {
      message.show(`Cannot propose: ${err.describe ? err.describe() : String(err)}`, "error");
    }
  }

  const form = h("form", { "aria-label": "Compose a change request", on: { submit: (event) => { event.preventDefault(); propose(false); } } },
    h("h4", {}, "Changes in the draft"), draftList,
    field("Title", title), field("Description (optional)", description),
    field("Apply at (UTC, optional)", applyAt, "Approved requests apply by themselves at this time."),
    useJson,
    h("div.inline", {},
      h("button.secondary", { type: "button", on: { click: () => propose(true) } }, "Preview impact (save as draft)"),
      h("button", { type: "submit" }, "Submit for review"),
      confirmButton("Discard draft", "Discard: sure?", async () => clearDraft(), "link")));

  // Scheduled: approved or pending requests whose apply_at is still ahead.
  const scheduled = h("div.scheduled");
  async function loadScheduled() {
    try {
      const pages = await Promise.all(["approved", "pending_approval"].map((s) => get("/change-requests", { state: s, limit: 100 })));
      const now = Date.now();
      const due = pages.flatMap((p) => p.data.data)
        .filter((cr) => cr.apply_at && Date.parse(cr.apply_at) > now)
        .sort((a, b) => Date.parse(a.apply_at) - Date.parse(b.apply_at));
      fill(scheduled, due.length
        ? table(["Title", "State", "Applies at", "Time left"], due.map((cr) => h("tr", { dataset: { id: cr.id } },
          h("td", {}, h("button.link", { type: "button", on: { click: () => show(cr.id) } }, cr.title)),
          h("td", {}, badge(cr.state)), h("td", {}, when(cr.apply_at)), h("td", {}, timeLeft(cr.apply_at, now)))), "scheduled-table")
        : h("p.empty", {}, "Nothing scheduled."));
    } catch (err) {
      fill(scheduled, h("p.message.error", {}, err.describe ? err.describe() : String(err)));
    }
  }

  onDraftChange(() => { if (view.isConnected) showDraft(); });
  state.addEventListener("change", () => load());
  more.addEventListener("click", () => load(true));
  const writable = !app.scopes || app.scopes.includes("write");
  fill(view, h("h2", {}, "Change requests"), message,
    writable ? h("section.card", { "aria-labelledby": "cr-new" }, h("h3", { id: "cr-new" }, "New change request"), form) : null,
    h("section.card", { "aria-labelledby": "cr-scheduled" }, h("h3", { id: "cr-scheduled" }, "Scheduled"), scheduled),
    h("section.card", { "aria-labelledby": "cr-all" }, h("h3", { id: "cr-all" }, "All requests"), field("State", state), list, more),
    detail);
  await Promise.all([writable ? showDraft() : null, load(), loadScheduled()]);
}
