// The context inspector: every resolved config value and permission of a tenant, the
// tenant each comes from (highlighted in the tree), why it won, and what it shadows.

import { get, nameOf, remember } from "./api.js";
import { badge, fill, h, jsonText, messageBox, table, when } from "./dom.js";
import { changesSince, timeControl } from "./history.js";

// Each tenant of the chain (root first, the tenant last) with its own entries; tenants
// above a scoped caller's subtree are not readable and are left out.
async function chainEntries(chain, kind) {
  const lists = await Promise.all(chain.map((t) =>
    get(`/tenants/${t.id}/${kind}`).then((r) => r.data).catch(() => null)));
  return chain.map((tenant, i) => ({ tenant, entries: lists[i] }));
}

function sourceButton(app, sourceId, selfId) {
  const label = sourceId === selfId ? `${nameOf(sourceId)} (this tenant)` : nameOf(sourceId);
  return h("button.link.source-link", {
    type: "button", title: "Show in the tree", dataset: { sourceId },
    on: { click: () => app.tree.highlight([sourceId]) },
  }, label);
}

// A resolved entry's row: its key first, then `cells`; focused or clicked, it highlights
// the tenant the value comes from in the tree.
function resolvedRow(app, entry, ...cells) {
  const highlight = () => app.tree.highlight([entry.source_tenant_id]);
  return h("tr", {
    dataset: { key: entry.key, source: entry.source_tenant_id }, tabindex: "0",
    on: { click: highlight, focus: highlight },
  }, h("th", { scope: "row" }, h("code", {}, entry.key)), ...cells);
}

function configWhy(entry, selfId) {
  const at = nameOf(entry.source_tenant_id);
  if (entry.locked) {
    return entry.source_tenant_id === selfId
      ? "Locked here: descendants cannot override it"
      : `Locked at ${at}: it cannot be overridden below`;
  }
  if (!entry.inherited) return "Set here: the nearest entry";
  return `Nearest entry: set at ${at}, none closer`;
}

function permissionWhy(entry, selfId) {
  const at = nameOf(entry.source_tenant_id);
  if (entry.locked) {
    return entry.source_tenant_id === selfId
      ? "Locked here (LOCKED): descendants cannot override it"
      : `Locked at ${at} (LOCKED): it cannot be overridden below`;
  }
  if (entry.source_tenant_id === selfId) {
    return entry.mode === "LOCAL" ? "Set here (LOCAL): applies to this tenant only" : "Set here: the nearest policy";
  }
  return `Nearest policy: set at ${at} (${entry.mode}); delegated, so this tenant may override it`;
}

// The entries of the same key elsewhere on the chain, and why each lost.
function shadowed(key, winner, chain, selfId, kind) {
  const notes = [];
  const winnerAt = nameOf(winner.source_tenant_id);
  for (const { tenant, entries } of chain) {
    if (!entries || tenant.id === winner.source_tenant_id) continue;
    const own = entries.find((e) => e.key === key);
    if (!own) continue;
    let reason;
    if (kind === "permissions" && own.mode === "LOCAL" && tenant.id !== selfId) {
      reason = "LOCAL: applies to that tenant only";
    } else if (winner.locked) {
      reason = `shadowed by the lock at ${winnerAt}`;
    } else {
      reason = `overridden by the nearer entry at ${winnerAt}`;
    }
    const value = kind === "permissions" ? String(own.value) : jsonText(own.value);
    notes.push(h("li", {}, h("strong", {}, tenant.name), ": ", h("code", {}, value), ` (${reason})`));
  }
  return notes.length ? h("ul.shadowed", {}, notes) : null;
}

export async function contextPage(view, tenantId, app) {
  const message = messageBox();
  let reveal = false;
  // A past moment (UTC, ISO 8601) the inspector shows, or null for the present.
  let asOf = null;
  const body = h("div.context-body");
  const changes = h("section.card.changes", { "aria-labelledby": "changes-title" });
  changes.hidden = true;
  // After a revert the changes are drawn again, and the confirmation with them: the
  // redrawn section's message box replaces the one that said it.
  async function showChanges(since, notice = null) {
    changes.hidden = false;
    await changesSince(changes, tenantId, since, async (text) => {
      await load();
      await showChanges(since, text);
    }, notice);
  }
  const control = timeControl((at) => { asOf = at; load(); }, showChanges);
  const revealButton = h("button.secondary", {
    type: "button", title: "Show sensitive values (admin scope)",
    on: { click: () => { reveal = !reveal; load(); } },
  }, "Reveal sensitive values");

  async function load() {
    let context;
    let tenant;
    let ancestors = [];
    try {
      if (asOf) {
        // The past as it was: the tenant, its chain and its (masked) context then.
        tenant = (await get(`/tenants/${tenantId}`, { as_of: asOf, include_archived: true })).data;
        remember([tenant]);
        ancestors = remember((await get(`/tenants/${tenantId}/ancestors`, { as_of: asOf })).data);
        context = (await get(`/tenants/${tenantId}/context`, { as_of: asOf })).data;
      } else {
        tenant = (await get(`/tenants/${tenantId}`)).data;
        remember([tenant]);
        ancestors = remember((await get(`/tenants/${tenantId}/ancestors`)).data);
        context = (await get(`/tenants/${tenantId}/context`, { reveal })).data;
      }
    } catch (err) {
      if (reveal && err.code === "INSUFFICIENT_SCOPE") {
        reveal = false;
        message.show(`Revealing needs the admin scope: ${err.describe()}`, "error");
        return;
      }
      fill(body, h("p.message.error", {}, err.describe()));
      return;
    }
    revealButton.textContent = reveal ? "Mask sensitive values" : "Reveal sensitive values";
    // History answers are masked: no revealing a past moment.
    revealButton.disabled = Boolean(asOf);
    const chain = [...ancestors, tenant];
    // What each value shadowed is read from the tenants' entries now: shown for the
    // present only.
    const [configChain, permissionChain] = asOf ? [[], []] : await Promise.all([
      chainEntries(chain, "config"), chainEntries(chain, "permissions"),
    ]);
    await app.tree.reveal(tenantId, ancestors);
    const sources = new Set();

    const configRows = Object.values(context.resolved_config).map((entry) => {
      sources.add(entry.source_tenant_id);
      return resolvedRow(app, entry,
        h("td", {}, h("code.value", {}, jsonText(entry.value))),
        h("td", {}, sourceButton(app, entry.source_tenant_id, tenantId),
          entry.inherited ? badge("inherited", "inherited") : null,
          entry.locked ? badge("locked", "locked") : null,
          // A revealed context keeps secrets of tenants above the caller's subtree masked.
          entry.masked_reason ? badge("masked: set above your subtree", "masked") : null),
        h("td.why", {}, configWhy(entry, tenantId), shadowed(entry.key, entry, configChain, tenantId, "config")));
    });
    const permissionRows = Object.values(context.resolved_permissions).map((entry) => {
      sources.add(entry.source_tenant_id);
      return resolvedRow(app, entry,
        h("td", {}, entry.value ? badge("allow", "allow") : badge("deny", "deny")),
        h("td", {}, badge(entry.mode, `mode-${entry.mode.toLowerCase()}`)),
        h("td", {}, sourceButton(app, entry.source_tenant_id, tenantId),
          entry.locked ? badge("locked", "locked") : null,
          entry.delegated ? badge("delegated", "delegated") : null),
        h("td.why", {}, permissionWhy(entry, tenantId),
          shadowed(entry.key, entry, permissionChain, tenantId, "permissions")));
    });
    app.tree.highlight([...sources]);

    fill(body,
      asOf ? h("p.message.info.as-of", { role: "note" },
        `As of ${when(asOf)}: the context as it was answered then. What each value shadowed is shown for the present only.`) : null,
      h("dl.fields.compact", {},
        h("dt", {}, "Tenant"), h("dd", {}, h("a", { href: `#/tenants/${tenantId}` }, tenant.name)),
        h("dt", {}, "Chain"), h("dd", {}, chain.map((t, i) => [i ? " → " : "", t.name])),
        h("dt", {}, "Depth"), h("dd", {}, String(context.depth)),
        h("dt", {}, "Isolation"), h("dd", {}, context.isolation_strategy)),
      h("section.card", { "aria-labelledby": "resolved-config-title" },
        h("h3", { id: "resolved-config-title" }, "Resolved config"),
        configRows.length
          ? table(["Key", "Value", "Comes from", "Why it won"], configRows, "context-config")
          : h("p.empty", {}, "No config applies to this tenant.")),
      h("section.card", { "aria-labelledby": "resolved-permissions-title" },
        h("h3", { id: "resolved-permissions-title" }, "Resolved permissions"),
        permissionRows.length
          ? table(["Key", "Value", "Mode", "Comes from", "Why it won"], permissionRows, "context-permissions")
          : h("p.empty", {}, "No permission policy applies to this tenant.")),
      h("p.hint", {}, "Select a row to highlight the tenant its value comes from in the tree."));
  }

  fill(view,
    h("header.page-head", {}, h("h2", {}, "Context inspector"),
      h("nav.page-actions", {}, h("a.button.secondary", { href: `#/tenants/${tenantId}` }, "Tenant page"), revealButton)),
    message, control, body, changes);
  await load();
}
