// A tenant's own config entries (locked and sensitive badges, reveal on purpose) and
// permission policies (with their modes), with forms to set and delete them.

import { del, get, learnNames, post, put } from "./api.js";
import { badge, confirmButton, fill, h, jsonText, messageBox, table, tenantRef, when } from "./dom.js";
import { addChange, timeLeft, utcInstant } from "./draft.js";

const MASK = "***";
const MODES = ["INHERIT", "LOCKED", "LOCAL"];
const MODE_HELP = {
  INHERIT: "applies here and below; descendants may set their own",
  LOCKED: "applies to the whole subtree; descendants cannot override",
  LOCAL: "applies to this tenant only",
};

function parseValue(text) {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { error: "The value must be JSON: text goes in double quotes, e.g. \"dark\"." };
  }
}

const enc = encodeURIComponent;

// An entry that removes itself: when, and the time left.
function expiry(timestamp) {
  if (!timestamp) return null;
  return h("span.expiry", { title: `expires_at ${timestamp}` },
    h("span.badge.expires", {}, `expires ${timeLeft(timestamp)}`), h("small.expires-at", {}, when(timestamp)));
}

function expiresInput(name) {
  return h("input", { name, type: "datetime-local", step: "1", "aria-label": "Expires at (UTC, optional)" });
}

// An instant as a datetime-local value read as UTC.
function localUtc(timestamp) {
  return timestamp ? new Date(timestamp).toISOString().slice(0, 19) : "";
}

function added(message, count) {
  message.show(`Added to the change request being composed (${count} change${count === 1 ? "" : "s"}).`, "success");
}

export function configSection(tenant, writable = true) {
  const base = `/tenants/${tenant.id}/config`;
  const message = messageBox();
  const body = h("div.entries");
  const key = h("input", { name: "config-key", required: true, autocomplete: "off", placeholder: "e.g. theme" });
  const value = h("textarea", { name: "config-value", rows: "2", placeholder: "JSON, e.g. \"dark\" or 42" });
  const locked = h("input", { type: "checkbox", name: "config-locked" });
  const sensitive = h("input", { type: "checkbox", name: "config-sensitive" });
  const expires = expiresInput("config-expires-at");

  async function load() {
    try {
      const { data } = await get(base);
      fill(body, data.length
        ? table(["Key", "Value", "Flags", ""], data.map(row), "config-table")
        : h("p.empty", {}, "No config entries of its own."));
    } catch (err) {
      fill(body, h("p.empty", {}, err.code === "TENANT_ARCHIVED"
        ? "Archived: restore the tenant to see and change its config." : err.describe()));
    }
  }

  function row(entry) {
    const shown = h("code.value", {}, jsonText(entry.value));
    const masked = entry.sensitive && entry.value === MASK;
    let revealed = false;
    const reveal = masked ? h("button.link", {
      type: "button", title: "Show the secret value (admin scope; not cached)",
      on: {
        click: async () => {
          if (revealed) {
            shown.textContent = jsonText(MASK);
            reveal.textContent = "Reveal";
            revealed = false;
            return;
          }
          try {
            const { data } = await get(`${base}/${enc(entry.key)}`, { reveal: true });
            shown.textContent = jsonText(data.value);
            reveal.textContent = "Hide";
            revealed = true;
          } catch (err) {
            message.show(`Cannot reveal ${entry.key}: ${err.describe()}`, "error");
          }
        },
      },
    }, "Reveal") : null;
    return h("tr", { dataset: { key: entry.key } },
      h("th", { scope: "row" }, h("code", {}, entry.key)),
      h("td", {}, shown, reveal),
      h("td", {}, entry.locked ? badge("locked", "locked") : null,
        entry.sensitive ? badge("sensitive", "sensitive") : null,
        entry.reveal_to_descendants ? badge("shared below", "shared") : null,
        expiry(entry.expires_at)),
      writable ? h("td.actions", {},
        h("button.link", {
          type: "button",
          on: {
            click: () => {
              key.value = entry.key;
              // A secret is never copied into the form: a new value must be typed.
              value.value = entry.sensitive ? "" : jsonText(entry.value);
              locked.checked = entry.locked;
              sensitive.checked = entry.sensitive;
              // A PUT without expires_at makes the entry permanent: keep its expiry.
              expires.value = localUtc(entry.expires_at);
              value.focus();
            },
          },
        }, "Edit"),
        confirmButton("Delete", "Confirm delete", async () => {
          try {
            await del(`${base}/${enc(entry.key)}`);
            message.show(`Deleted ${entry.key}.`, "success");
            await load();
          } catch (err) {
            message.show(`Cannot delete ${entry.key}: ${err.describe()}`, "error");
          }
        }, "link"),
        h("button.link", {
          type: "button", title: "Delete it through a change request",
          on: { click: () => added(message, addChange({ op: "config.delete", tenant_id: tenant.id, key: entry.key })) },
        }, "Add delete to change request")) : null);
  }

  // What saving would do, before saving: the tenants whose resolved value changes, the
  // descendants' entries a lock would shadow, and whether the write would be refused.
  const impact = h("div.impact", { role: "status", "aria-live": "polite" });
  async function previewImpact() {
    const parsed = parseValue(value.value);
    if (parsed.error || !key.value.trim()) {
      message.show(parsed.error || "Enter a key to preview.", "error");
      return;
    }
    try {
      const { data } = await post(`${base}/${enc(key.value.trim())}/preview`, {
        change: "set", value: parsed.value, locked: locked.checked, sensitive: sensitive.checked,
      }, { query: { limit: 20 } });
      await learnNames(data.changes.map((c) => c.tenant_id));
      const lines = data.changes.map((c) => h("li", {}, tenantRef(c.tenant_id), ": ",
        c.old ? jsonText(c.old.value) : "unset", " → ", c.new ? jsonText(c.new.value) : "unset"));
      fill(impact,
        data.refused ? h("p.message.error", {}, `Would be refused: ${data.refused.code} — ${data.refused.message}`) : null,
        h("p", {}, `${data.changed_tenants} tenant${data.changed_tenants === 1 ? "" : "s"} would see a new value`
          + (data.shadowed_total ? `; ${data.shadowed_total} own entr${data.shadowed_total === 1 ? "y" : "ies"} below would be overridden by the lock.` : ".")),
        lines.length ? h("ul.impact-list", {}, lines) : null);
    } catch (err) {
      message.show(`Cannot preview ${key.value.trim()}: ${err.describe()}`, "error");
    }
  }

  async function save(event) {
    event.preventDefault();
    const parsed = parseValue(value.value);
    if (parsed.error) {
      message.show(parsed.error, "error");
      return;
    }
    try {
      const { status } = await put(`${base}/${enc(key.value.trim())}`, {
        value: parsed.value, locked: locked.checked, sensitive: sensitive.checked,
        expires_at: utcInstant(expires.value),
      });
      message.show(`${status === 201 ? "Created" : "Saved"} ${key.value.trim()}.`, "success");
      key.value = "";
      value.value = "";
      locked.checked = false;
      sensitive.checked = false;
      expires.value = "";
      await load();
    } catch (err) {
      message.show(`Cannot save ${key.value.trim()}: ${err.describe()}`, "error");
    }
  }

  // The same change, kept for a change request instead of written now.
  function addToRequest() {
    const parsed = parseValue(value.value);
    if (parsed.error || !key.value.trim()) {
      message.show(parsed.error || "Enter a key.", "error");
      return;
    }
    added(message, addChange({
      op: "config.set", tenant_id: tenant.id, key: key.value.trim(), value: parsed.value,
      locked: locked.checked, sensitive: sensitive.checked, expires_at: utcInstant(expires.value),
    }));
  }

  const form = h("form.entry-form", { "aria-label": "Set a config entry", on: { submit: save } },
    h("label.field", {}, h("span.label", {}, "Key"), key),
    h("label.field.grow", {}, h("span.label", {}, "Value (JSON)"), value),
    h("label.toggle", {}, locked, " Locked (descendants cannot override)"),
    h("label.toggle", {}, sensitive, " Sensitive (encrypted, shown as ***)"),
    h("label.field", {}, h("span.label", {}, "Expires at (UTC, optional)"), expires),
    h("button.secondary", { type: "button", on: { click: previewImpact } }, "Preview impact"),
    h("button.secondary", { type: "button", on: { click: addToRequest } }, "Add to change request"),
    h("button", { type: "submit" }, "Save entry"));
  const section = h("section.card", { "aria-labelledby": "config-title" },
    h("h3", { id: "config-title" }, "Config (own entries)"), body,
    writable ? form : null, writable ? impact : null, message);
  load();
  return section;
}

export function permissionsSection(tenant, writable = true) {
  const base = `/tenants/${tenant.id}/permissions`;
  const message = messageBox();
  const body = h("div.entries");
  const key = h("input", { name: "permission-key", required: true, autocomplete: "off", placeholder: "e.g. billing.view" });
  const value = h("select", { name: "permission-value" },
    h("option", { value: "true" }, "allow (true)"), h("option", { value: "false" }, "deny (false)"));
  const mode = h("select", { name: "permission-mode" },
    MODES.map((m) => h("option", { value: m, title: MODE_HELP[m] }, m)));
  const expires = expiresInput("permission-expires-at");

  async function load() {
    try {
      const { data } = await get(base);
      fill(body, data.length
        ? table(["Key", "Value", "Mode", ""], data.map(row), "permission-table")
        : h("p.empty", {}, "No permission policies of its own."));
    } catch (err) {
      fill(body, h("p.empty", {}, err.code === "TENANT_ARCHIVED"
        ? "Archived: restore the tenant to see and change its policies." : err.describe()));
    }
  }

  function row(policy) {
    return h("tr", { dataset: { key: policy.key } },
      h("th", { scope: "row" }, h("code", {}, policy.key)),
      h("td", {}, policy.value ? badge("allow", "allow") : badge("deny", "deny")),
      h("td", {}, h("span", { title: MODE_HELP[policy.mode] || "" }, badge(policy.mode, `mode-${policy.mode.toLowerCase()}`)),
        expiry(policy.expires_at)),
      writable ? h("td.actions", {},
        h("button.link", {
          type: "button",
          on: {
            click: () => {
              key.value = policy.key;
              value.value = String(policy.value);
              mode.value = policy.mode;
              expires.value = localUtc(policy.expires_at);
            },
          },
        }, "Edit"),
        confirmButton("Delete", "Confirm delete", async () => {
          try {
            await del(`${base}/${enc(policy.key)}`);
            message.show(`Deleted ${policy.key}.`, "success");
            await load();
          } catch (err) {
            message.show(`Cannot delete ${policy.key}: ${err.describe()}`, "error");
          }
        }, "link"),
        h("button.link", {
          type: "button", title: "Delete it through a change request",
          on: { click: () => added(message, addChange({ op: "permission.delete", tenant_id: tenant.id, key: policy.key })) },
        }, "Add delete to change request")) : null);
  }

  // What saving would do, before saving (nothing is written).
  const impact = h("div.impact", { role: "status", "aria-live": "polite" });
  async function previewImpact() {
    if (!key.value.trim()) {
      message.show("Enter a key to preview.", "error");
      return;
    }
    try {
      const { data } = await post(`${base}/${enc(key.value.trim())}/preview`, {
        change: "set", value: value.value === "true", mode: mode.value,
      }, { query: { limit: 20 } });
      await learnNames(data.changes.map((c) => c.tenant_id));
      const lines = data.changes.map((c) => h("li", {}, tenantRef(c.tenant_id), ": ",
        c.old ? `${c.old.value} (${c.old.mode})` : "unset", " → ", c.new ? `${c.new.value} (${c.new.mode})` : "unset"));
      fill(impact,
        data.refused ? h("p.message.error", {}, `Would be refused: ${data.refused.code} — ${data.refused.message}`) : null,
        h("p", {}, `${data.changed_tenants} tenant${data.changed_tenants === 1 ? "" : "s"} would resolve it differently`
          + (data.shadowed_total ? `; ${data.shadowed_total} own polic${data.shadowed_total === 1 ? "y" : "ies"} below would be overridden.` : ".")),
        lines.length ? h("ul.impact-list", {}, lines) : null);
    } catch (err) {
      message.show(`Cannot preview ${key.value.trim()}: ${err.describe()}`, "error");
    }
  }

  async function save(event) {
    event.preventDefault();
    try {
      const { status } = await put(`${base}/${enc(key.value.trim())}`, {
        value: value.value === "true", mode: mode.value, expires_at: utcInstant(expires.value),
      });
      message.show(`${status === 201 ? "Created" : "Saved"} ${key.value.trim()}.`, "success");
      key.value = "";
      expires.value = "";
      await load();
    } catch (err) {
      message.show(`Cannot save ${key.value.trim()}: ${err.describe()}`, "error");
    }
  }

  function addToRequest() {
    if (!key.value.trim()) {
      message.show("Enter a key.", "error");
      return;
    }
    added(message, addChange({
      op: "permission.set", tenant_id: tenant.id, key: key.value.trim(),
      value: value.value === "true", mode: mode.value, expires_at: utcInstant(expires.value),
    }));
  }

  const form = h("form.entry-form", { "aria-label": "Set a permission policy", on: { submit: save } },
    h("label.field", {}, h("span.label", {}, "Key"), key),
    h("label.field", {}, h("span.label", {}, "Value"), value),
    h("label.field", {}, h("span.label", {}, "Mode"), mode),
    h("label.field", {}, h("span.label", {}, "Expires at (UTC, optional)"), expires),
    h("button.secondary", { type: "button", on: { click: previewImpact } }, "Preview impact"),
    h("button.secondary", { type: "button", on: { click: addToRequest } }, "Add to change request"),
    h("button", { type: "submit" }, "Save policy"));
  const section = h("section.card", { "aria-labelledby": "permissions-title" },
    h("h3", { id: "permissions-title" }, "Permission policies (own)"), body,
    writable ? form : null, writable ? impact : null, message);
  load();
  return section;
}
