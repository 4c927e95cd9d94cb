// The context inspector's history: the time control ("as of" a moment), the changes
// since a moment (each with the revision and audit entry that caused it), and reverting
// a revision with its impact shown first (docs/history.md).

import { get, nameOf, post } from "./api.js";
import { badge, field, fill, h, jsonText, messageBox, table, when } from "./dom.js";

// A datetime-local value, read as UTC, in the API's ISO 8601 form (as the audit log's).
export function utcMoment(value) {
  if (!value) return null;
  const withSeconds = value.length === 16 ? `${value}:00` : value;
  return `${withSeconds}Z`;
}

// The time control: "As of" a UTC time (the inspector then shows the context as GET
// /context answered then), "Now" for the present, and "Changes since" that time.
export function timeControl(onAsOf, onChangesSince) {
  const input = h("input", { type: "datetime-local", step: "1", name: "as_of" });
  const form = h("form.inline.time-control", {
    "aria-label": "Time travel",
    on: { submit: (event) => { event.preventDefault(); onAsOf(utcMoment(input.value)); } },
  },
  field("Moment (UTC)", input, "The context as it was then, or what changed since"),
  h("button.secondary", { type: "submit" }, "Show as of"),
  h("button.secondary", {
    type: "button",
    on: { click: () => { const at = utcMoment(input.value); if (at) onChangesSince(at); } },
  }, "Changes since"),
  h("button.link", { type: "button", on: { click: () => { input.value = ""; onAsOf(null); } } }, "Now"));
  return form;
}

function entryText(kind, entry) {
  if (!entry) return h("span.empty", {}, "—");
  const parts = kind === "permissions"
    ? [entry.value ? badge("allow", "allow") : badge("deny", "deny"), badge(entry.mode, `mode-${entry.mode.toLowerCase()}`)]
    : [h("code.value", {}, jsonText(entry.value)), entry.locked ? badge("locked", "locked") : null];
  return h("span.entry", {}, ...parts, ` from ${nameOf(entry.source_tenant_id)}`,
    entry.expires_at ? h("small", {}, ` until ${when(entry.expires_at)}`) : null);
}

// One audit entry, fetched when asked (the audit log needs the admin scope).
function auditLink(auditId) {
  if (!auditId) return h("span.empty", {}, "no audit entry");
  const shown = h("div.audit-entry");
  const button = h("button.link.audit-link", {
    type: "button", title: auditId,
    on: {
      click: async () => {
        try {
          const entry = (await get(`/audit-logs/${auditId}`)).data;
          fill(shown, h("p", {}, h("code", {}, entry.action), ` by ${entry.actor_type} `,
            h("code", {}, entry.actor_id), ` at ${when(entry.created_at)}`),
          entry.changes ? h("pre.json", {}, jsonText(entry.changes)) : null);
        } catch (err) {
          fill(shown, h("p.message.error", {}, `${auditId}: ${err.describe()}`));
        }
      },
    },
  }, "Audit entry");
  return h("span", {}, button, shown);
}

// The newest revision the service has committed, from a batch read of this tenant (its
// X-Revision): the diff's end, taken from the service's clock rather than the browser's.
async function newestRevision(tenantId) {
  const answer = await post("/contexts/batch", { tenant_ids: [tenantId] });
  return Number.parseInt(answer.headers.get("X-Revision"), 10);
}

// What changed in the context since a moment, with a revert per causing revision.
export async function changesSince(container, tenantId, since, onReverted, notice = null) {
  const message = messageBox();
  let diff;
  try {
    const to = await newestRevision(tenantId);
    diff = (await get(`/tenants/${tenantId}/context/diff`, { from: since, to })).data;
  } catch (err) {
    fill(container, h("p.message.error", {}, err.describe()));
    return;
  }
  const impact = h("div.revert-impact");
  const rows = [
    ...diff.config.map((d) => ["config", d]), ...diff.permissions.map((d) => ["permissions", d]),
  ].map(([kind, d]) => h("tr", { dataset: { key: d.key, kind, revision: String(d.revision) } },
    h("th", { scope: "row" }, h("code", {}, d.key), " ", badge(kind === "config" ? "config" : "permission")),
    h("td", {}, badge(d.change, `change-${d.change}`)),
    h("td", {}, entryText(kind, d.before)),
    h("td", {}, entryText(kind, d.after)),
    h("td", {}, h("span.revision", {}, `revision ${d.revision}`), " ", auditLink(d.audit_id)),
    h("td", {}, h("button.secondary.revert", {
      type: "button", on: { click: () => previewRevert(impact, d.revision, message, onReverted) },
    }, "Revert…"))));
  fill(container,
    h("h3", { id: "changes-title" }, `Changes since ${when(since)} (revisions ${diff.from} to ${diff.to})`),
    rows.length
      ? table(["Key", "Change", "Before", "After", "Caused by", ""], rows, "changes-table")
      : h("p.empty", {}, "Nothing changed in this context since then."),
    message, impact);
  if (notice) message.show(notice, "success");
}

function revertLines(changes) {
  return h("ul.revert-changes", {}, changes.map((c) => h("li", { dataset: { key: c.key } },
    h("code", {}, c.key), ` at ${nameOf(c.tenant_id)} (${c.kind}): `,
    c.restored ? ["back to ", h("code", {}, jsonText(c.restored.value))] : "removed",
    c.later_revisions.length ? h("small", {}, ` (changed later by ${c.later_revisions.join(", ")})`) : null)));
}

// The impact first (a dry run); then the revert, or on a conflict the later revisions
// and a forced revert.
async function previewRevert(impact, revision, message, onReverted) {
  message.clear();
  let preview;
  try {
    preview = (await post(`/revisions/${revision}/revert?dry_run=true`, {})).data;
  } catch (err) {
    if (err.code !== "REVERT_CONFLICT") {
      fill(impact, h("p.message.error", {}, err.describe()));
      return;
    }
    fill(impact, h("section.card", { "aria-label": `Revert revision ${revision}` },
      h("p.message.error", {}, err.describe()),
      h("ul.conflicts", {}, err.details.map((d) => h("li", {}, `${d.field}: ${d.message}`))),
      h("button.danger", { type: "button", on: { click: () => apply(true) } }, `Revert revision ${revision} anyway`)));
    return;
  }
  fill(impact, h("section.card", { "aria-label": `Revert revision ${revision}` },
    h("h4", {}, `Reverting revision ${revision} would change`), revertLines(preview.changes),
    h("button.danger", { type: "button", on: { click: () => apply(false) } }, `Revert revision ${revision}`)));

  async function apply(force) {
    try {
      const answer = await post(`/revisions/${revision}/revert`, force ? { force: true } : {});
      fill(impact);
      const text = `Revision ${revision} reverted as revision ${answer.headers.get("X-Revision")}.`;
      message.show(text, "success");
      await onReverted(text);
    } catch (err) {
      fill(impact, h("p.message.error", {}, err.describe()));
    }
  }
}
