// The tenant page: its fields, edits of name and metadata, a child, a move by picking a
// new parent, archive and restore, and its own config and permission policies.

import { del, get, learnNames, mergePatch, nameOf, patch, post, remember } from "./api.js";
import { configSection, permissionsSection } from "./entries.js";
import { constraintsSection } from "./constraints.js";
import { badge, confirmButton, field, fill, h, jsonText, messageBox, tenantRef, when } from "./dom.js";
import { addChange } from "./draft.js";

function describeMoveError(err, tenant, target) {
  const targetName = target ? `“${target.name}”` : "the top level";
  if (err.code === "CYCLE_DETECTED") {
    return `Cannot move “${tenant.name}” under ${targetName}: ${targetName} is “${tenant.name}” ` +
      `itself or lies inside its subtree, so the tree would contain a cycle. (CYCLE_DETECTED)`;
  }
  if (err.code === "TENANT_ARCHIVED") {
    return `Cannot move “${tenant.name}” under ${targetName}: that tenant is archived. (TENANT_ARCHIVED)`;
  }
  return `Cannot move “${tenant.name}”: ${err.describe()}`;
}

export async function tenantPage(view, tenantId, app) {
  let response;
  try {
    response = await get(`/tenants/${tenantId}`, { include_archived: true });
  } catch (err) {
    fill(view, h("h2", {}, "Tenant"), h("p.message.error", {}, err.describe()));
    return;
  }
  const tenant = response.data;
  let etag = response.headers.get("ETag");
  remember([tenant]);
  let ancestors = [];
  if (tenant.status === "active") {
    try {
      ancestors = remember((await get(`/tenants/${tenant.id}/ancestors`)).data);
    } catch (err) {
      app.notify(err.describe(), "error");
    }
  }
  app.tree.reveal(tenant.id, tenant.status === "active" ? ancestors : null);
  const archived = tenant.status === "archived";
  // Only what the credential's scopes allow: a read-only key is offered no edit form.
  const writable = !app.scopes || app.scopes.includes("write");
  const reload = async () => {
    await app.tree.reload();
    await tenantPage(view, tenant.id, app);
  };

  const path = h("span.path", {},
    ancestors.map((a) => [h("a", { href: `#/tenants/${a.id}` }, a.name), " / "]), h("strong", {}, tenant.name));
  const fields = h("dl.fields", {}, [
    ["ID", h("code", {}, tenant.id)],
    ["Slug", h("code", {}, tenant.slug)],
    ["Path", path],
    ["Parent", tenant.parent_id ? h("a", { href: `#/tenants/${tenant.parent_id}` }, nameOf(tenant.parent_id)) : "— (root)"],
    ["Depth", String(tenant.depth)],
    ["Isolation", tenant.isolation_strategy],
    ["Region", tenant.region],
    ["Status", badge(tenant.status, tenant.status)],
    ["Archived at", when(tenant.deleted_at)],
    ["Created", when(tenant.created_at)],
    ["Updated", when(tenant.updated_at)],
  ].map(([label, value]) => [h("dt", {}, label), h("dd", {}, value)]));

  // Name and metadata: a JSON merge patch of what changed, guarded by the ETag.
  const editMessage = messageBox();
  const nameInput = h("input", { name: "name", value: tenant.name, required: true, maxlength: "255" });
  const metadataInput = h("textarea", { name: "metadata", rows: "4", value: jsonText(tenant.metadata) });
  // What changed, as a merge patch; null (with the reason shown) when there is nothing.
  function editBody() {
    let metadata;
    try {
      metadata = JSON.parse(metadataInput.value || "{}");
    } catch {
      metadata = null;
    }
    if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
      editMessage.show("Metadata must be a JSON object.", "error");
      return null;
    }
    const body = {};
    if (nameInput.value !== tenant.name) body.name = nameInput.value;
    const metadataPatch = mergePatch(tenant.metadata, metadata);
    if (Object.keys(metadataPatch).length) body.metadata = metadataPatch;
    if (!Object.keys(body).length) {
      editMessage.show("Nothing changed.", "info");
      return null;
    }
    return body;
  }
  const addedTo = (box, count) => box.show(
    `Added to the change request being composed (${count} change${count === 1 ? "" : "s"}).`, "success");
  const editForm = h("form.stack", {
    "aria-label": "Edit the tenant",
    on: {
      submit: async (event) => {
        event.preventDefault();
        const body = editBody();
        if (!body) return;
        try {
          const result = await patch(`/tenants/${tenant.id}`, body, etag ? { "If-Match": etag } : {});
          etag = result.headers.get("ETag");
          app.notify(`Saved “${result.data.name}”.`, "success");
          await reload();
        } catch (err) {
          editMessage.show(err.code === "PRECONDITION_FAILED"
            ? "Someone changed this tenant since you opened it: reload the page and edit again. (PRECONDITION_FAILED)"
            : `Cannot save: ${err.describe()}`, "error");
        }
      },
    },
  },
  field("Name", nameInput),
  field("Metadata (JSON object)", metadataInput),
  h("div.inline", {},
    h("button", { type: "submit", disabled: archived }, "Save changes"),
    h("button.secondary", {
      type: "button", disabled: archived,
      on: {
        click: () => {
          const body = editBody();
          if (body) addedTo(editMessage, addChange({ op: "tenant.update", tenant_id: tenant.id, ...body }));
        },
      },
    }, "Add to change request")),
  editMessage);

  // A child of this tenant.
  const childMessage = messageBox();
  const childName = h("input", { name: "child-name", required: true, maxlength: "255" });
  const childSlug = h("input", { name: "child-slug", required: true, pattern: "[a-z][a-z0-9_]{0,62}", maxlength: "63" });
  const childForm = h("form.stack", {
    "aria-label": "Create a child tenant",
    on: {
      submit: async (event) => {
        event.preventDefault();
        try {
          const { data } = await post("/tenants", {
            name: childName.value, slug: childSlug.value, parent_id: tenant.id,
          });
          remember([data]);
          app.notify(`Created “${data.name}” under “${tenant.name}”.`, "success");
          await app.tree.reload();
          app.navigate(`#/tenants/${data.id}`);
        } catch (err) {
          childMessage.show(`Cannot create: ${err.describe()}`, "error");
        }
      },
    },
  },
  field("Name", childName),
  field("Slug", childSlug, "lowercase letters, digits and _; starts with a letter"),
  h("button", { type: "submit", disabled: archived }, "Create child"),
  childMessage);

  // Move: pick the new parent from a search, or make the tenant a root.
  const moveMessage = messageBox();
  let target = null;
  const chosen = h("p.chosen", {}, "No new parent chosen.");
  const moveSearch = h("input", { type: "search", name: "move-search", placeholder: "Find the new parent by slug or name", autocomplete: "off" });
  const candidates = h("ul.candidates", { "aria-label": "New parent candidates" });
  const moveButton = h("button", { type: "button", disabled: true, on: { click: () => move(target) } }, "Move here");
  const moveLater = (newParent) => addedTo(moveMessage, addChange({
    op: "tenant.move", tenant_id: tenant.id, new_parent_id: newParent ? newParent.id : null,
  }));
  const moveToRequest = h("button.secondary", {
    type: "button", disabled: true, on: { click: () => moveLater(target) },
  }, "Add to change request");
  // What the move would change, shown before it is made (nothing is written).
  const movePreview = h("div.impact", { role: "status", "aria-live": "polite" });
  async function previewMove(newParent) {
    try {
      const { data } = await post(`/tenants/${tenant.id}/move/preview`,
        { new_parent_id: newParent ? newParent.id : null }, { query: { limit: 20 } });
      if (data.refused) {
        fill(movePreview, h("p.message.error", {}, `Would be refused: ${data.refused.code} — ${data.refused.message}`));
        return;
      }
      await learnNames(data.changes.map((c) => c.tenant_id));
      const entries = data.changes.flatMap((c) => c.entries.map((e) => h("li", {},
        tenantRef(c.tenant_id), ` ${e.kind} ${e.key}: `,
        e.old ? JSON.stringify(e.old.value) : "unset", " → ", e.new ? JSON.stringify(e.new.value) : "unset",
        e.shadows_own ? " (overrides its own entry)" : "")));
      fill(movePreview,
        h("p", {}, `${data.changed_tenants} tenant${data.changed_tenants === 1 ? "" : "s"} would resolve config or permissions differently.`),
        entries.length ? h("ul.impact-list", {}, entries) : null);
    } catch (err) {
      fill(movePreview, h("p.message.error", {}, `Cannot preview the move: ${err.describe()}`));
    }
  }
  async function move(newParent) {
    try {
      const result = await post(`/tenants/${tenant.id}/move`,
        { new_parent_id: newParent ? newParent.id : null }, { headers: etag ? { "If-Match": etag } : {} });
      etag = result.headers.get("ETag");
      app.notify(`Moved “${tenant.name}” ${newParent ? `under “${newParent.name}”` : "to the top level"}.`, "success");
      await reload();
    } catch (err) {
      moveMessage.show(describeMoveError(err, tenant, newParent), "error");
    }
  }
  const moveForm = h("form.stack", {
    "aria-label": "Move the tenant",
    on: {
      submit: async (event) => {
        event.preventDefault();
        const text = moveSearch.value.trim();
        if (!text) return;
        try {
          const { data } = await get("/tenants", { search: text, limit: 10 });
          remember(data.data);
          // Not the tenant itself nor anything below it: the move would make a cycle.
          const inside = (c) => c.id === tenant.id || (c.ancestry_path || "").split("/").includes(tenant.id);
          const allowed = data.data.filter((c) => !inside(c));
          fill(candidates, allowed.length ? allowed.map((candidate) => h("li", {},
            h("button.link", {
              type: "button",
              on: {
                click: () => {
                  target = candidate;
                  fill(chosen, "New parent: ", h("strong", {}, candidate.name), " ", h("code", {}, candidate.slug));
                  moveButton.disabled = false;
                  moveToRequest.disabled = false;
                  moveMessage.clear();
                  // The choice and its confirmation are below the list: bring them in view.
                  previewMove(candidate).then(() => moveButton.scrollIntoView({ block: "nearest" }));
                },
              },
            }, candidate.name), " ", h("span.node-slug", {}, candidate.slug))) : h("li.empty", {}, "No match."));
        } catch (err) {
          moveMessage.show(err.describe(), "error");
        }
      },
    },
  },
  h("div.inline", {}, moveSearch, h("button", { type: "submit", disabled: archived }, "Find")),
  candidates, chosen, movePreview,
  h("div.inline", {}, moveButton, moveToRequest,
    tenant.parent_id ? h("button.secondary", { type: "button", disabled: archived, on: { click: () => move(null) } }, "Make it a root") : null),
  moveMessage);

  // Archive (soft delete) or restore.
  const lifeMessage = messageBox();
  const lifecycle = archived
    ? h("button", {
      type: "button",
      on: {
        click: async () => {
          try {
            await post(`/tenants/${tenant.id}/restore`);
            app.notify(`Restored “${tenant.name}”.`, "success");
            await reload();
          } catch (err) {
            lifeMessage.show(err.code === "PARENT_ARCHIVED"
              ? "Restore its parent first: it is archived too. (PARENT_ARCHIVED)" : `Cannot restore: ${err.describe()}`, "error");
          }
        },
      },
    }, "Restore")
    : confirmButton("Archive", "Confirm archive", async () => {
      try {
        await del(`/tenants/${tenant.id}`, etag ? { "If-Match": etag } : {});
        app.notify(`Archived “${tenant.name}”.`, "success");
        await reload();
      } catch (err) {
        lifeMessage.show(err.code === "HAS_CHILDREN"
          ? "Archive or move its active children first. (HAS_CHILDREN)" : `Cannot archive: ${err.describe()}`, "error");
      }
    });

  const lifeToRequest = h("button.secondary", {
    type: "button",
    on: {
      click: () => addedTo(lifeMessage, addChange({
        op: archived ? "tenant.restore" : "tenant.archive", tenant_id: tenant.id,
      })),
    },
  }, "Add to change request");

  fill(view,
    h("header.page-head", {},
      h("h2", {}, tenant.name), " ", badge(tenant.status, tenant.status),
      h("nav.page-actions", {},
        archived ? null : h("a.button", { href: `#/tenants/${tenant.id}/context` }, "Context inspector"))),
    h("div.grid", {},
      h("section.card", { "aria-labelledby": "fields-title" }, h("h3", { id: "fields-title" }, "Fields"), fields),
      writable ? h("section.card", { "aria-labelledby": "edit-title" }, h("h3", { id: "edit-title" }, "Edit"), editForm) : null,
      configSection(tenant, writable),
      constraintsSection(tenant),
      permissionsSection(tenant, writable),
      writable ? h("section.card", { "aria-labelledby": "child-title" }, h("h3", { id: "child-title" }, "New child"), childForm) : null,
      writable ? h("section.card", { "aria-labelledby": "move-title" }, h("h3", { id: "move-title" }, "Move"), moveForm) : null,
      writable ? h("section.card", { "aria-labelledby": "life-title" },
        h("h3", { id: "life-title" }, archived ? "Restore" : "Archive"),
        h("p", {}, archived
          ? "Restoring makes the tenant active again (its parent must be active)."
          : "Archiving is a soft delete; it needs no active children and can be undone."),
        h("div.inline", {}, lifecycle, lifeToRequest), lifeMessage) : null,
      writable ? null : h("p.hint", {}, "This credential can read only: changes need the write scope.")));
}
