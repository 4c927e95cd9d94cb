// A tenant's own config entries (locked and sensitive badges, reveal on purpose) and
// permission policies (with their modes), with forms to set and delete them.

import { del, get, learnNames, post, put } from "./api.js";
import { badge, confirmButton, fill, h, jsonText, messageBox, table, tenantRef } from "./dom.js";

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

export function configSection(tenant, writable = true) {
  const base = `/tenants/${tenant.id}/config`;
  const message = messageBox();
  const body = h("div.entries");
  const key = h("input", { name: "config-key", required: true, autocomplete: "off", placeholder: "e.g. theme" });
  const value = h("textarea", { name: "config-value", rows: "2", placeholder: "JSON, e.g. \"dark\" or 42" });
  const locked = h("input", { type: "checkbox", name: "config-locked" });
  const sensitive = h("input", { type: "checkbox", name: "config-sensitive" });

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
        entry.reveal_to_descendants ? badge("shared below", "shared") : null),
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
        }, "link")) : null);
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
      });
      message.show(`${status === 201 ? "Created" : "Saved"} ${key.value.trim()}.`, "success");
      key.value = "";
      value.value = "";
      locked.checked = false;
      sensitive.checked = false;
      await load();
    } catch (err) {
      message.show(`Cannot save ${key.value.trim()}: ${err.describe()}`, "error");
    }
  }

  const form = h("form.entry-form", { "aria-label": "Set a config entry", on: { submit: save } },
    h("label.field", {}, h("span.label", {}, "Key"), key),
    h("label.field.grow", {}, h("span.label", {}, "Value (JSON)"), value),
    h("label.toggle", {}, locked, " Locked (descendants cannot override)"),
    h("label.toggle", {}, sensitive, " Sensitive (encrypted, shown as ***)"),
    h("button.secondary", { type: "button", on: { click: previewImpact } }, "Preview impact"),
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
      h("td", {}, h("span", { title: MODE_HELP[policy.mode] || "" }, badge(policy.mode, `mode-${policy.mode.toLowerCase()}`))),
      writable ? h("td.actions", {},
        h("button.link", {
          type: "button",
          on: { click: () => { key.value = policy.key; value.value = String(policy.value); mode.value = policy.mode; } },
        }, "Edit"),
        confirmButton("Delete", "Confirm delete", async () => {
          try {
            await del(`${base}/${enc(policy.key)}`);
            message.show(`Deleted ${policy.key}.`, "success");
            await load();
          } catch (err) {
            message.show(`Cannot delete ${policy.key}: ${err.describe()}`, "error");
          }
        }, "link")) : null);
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
        value: value.value === "true", mode: mode.value,
      });
      message.show(`${status === 201 ? "Created" : "Saved"} ${key.value.trim()}.`, "success");
      key.value = "";
      await load();
    } catch (err) {
      message.show(`Cannot save ${key.value.trim()}: ${err.describe()}`, "error");
    }
  }

  const form = h("form.entry-form", { "aria-label": "Set a permission policy", on: { submit: save } },
    h("label.field", {}, h("span.label", {}, "Key"), key),
    h("label.field", {}, h("span.label", {}, "Value"), value),
    h("label.field", {}, h("span.label", {}, "Mode"), mode),
    h("button.secondary", { type: "button", on: { click: previewImpact } }, "Preview impact"),
    h("button", { type: "submit" }, "Save policy"));
  const section = h("section.card", { "aria-labelledby": "permissions-title" },
    h("h3", { id: "permissions-title" }, "Permission policies (own)"), body,
    writable ? form : null, writable ? impact : null, message);
  load();
  return section;
}
