// The tree browser: roots, children loaded when a node is expanded (with child counts),
// search by slug or name, archived tenants on request, and highlights for the context
// inspector.

import { keep as get, remember } from "./api.js";
import { badge, fill, h, messageBox } from "./dom.js";

const PAGE = 100;

export class TreeBrowser {
  constructor(onError) {
    this.onError = onError;
    this.showArchived = false;
    this.nodes = new Map(); // id -> {tenant, childCount, expanded, loaded, row, group, item}
    this.selected = null;
    this.list = h("ul.tree", { role: "tree", "aria-label": "Tenants" });
    this.more = h("div.more");
    this.results = h("ul.search-results", { "aria-label": "Search results" });
    this.status = messageBox();
    this.searchInput = h("input", {
      type: "search", name: "search", placeholder: "Search by slug or name", autocomplete: "off",
      "aria-label": "Search tenants by slug or name",
    });
    this.searchForm = h("form.search", { on: { submit: (e) => { e.preventDefault(); this.search(); } } },
      this.searchInput, h("button", { type: "submit" }, "Search"));
    this.archivedToggle = h("input", {
      type: "checkbox", name: "show-archived",
      on: { change: () => { this.showArchived = this.archivedToggle.checked; this.reload(); } },
    });
    this.element = h("section.tree-panel", { "aria-label": "Tenant tree" },
      this.searchForm,
      h("label.toggle", {}, this.archivedToggle, " Show archived tenants"),
      this.results,
      this.status,
      this.list,
      this.more);
  }

  statusFilter() {
    return this.showArchived ? "all" : "active";
  }

  async reload() {
    const expanded = [...this.nodes.values()].filter((n) => n.expanded).map((n) => n.tenant.id);
    this.nodes.clear();
    this.rootCursor = null;
    fill(this.list);
    fill(this.more);
    await this.loadRoots();
    for (const id of expanded) {
      const node = this.nodes.get(id);
      if (node && node.childCount > 0) await this.expand(node);
    }
    if (this.selected) this.markSelected(this.selected);
  }

  async loadRoots(cursor) {
    try {
      const { data } = await get("/tenants", {
        roots: true, include_child_counts: true, limit: PAGE, status: this.statusFilter(), cursor,
      });
      remember(data.data);
      if (!data.data.length && !cursor) {
        this.status.show("No tenants yet: create a root tenant to start.", "info");
      } else {
        this.status.clear();
      }
      for (const tenant of data.data) this.list.append(this.renderNode(tenant, 0));
      this.rootCursor = data.next_cursor;
      fill(this.more, data.has_more
        ? h("button.link", { type: "button", on: { click: () => this.loadRoots(data.next_cursor) } },
          "Load more roots")
        : null);
    } catch (err) {
      this.onError(err);
    }
  }

  renderNode(tenant, level) {
    const twisty = h("button.twisty", {
      type: "button", "aria-label": `Expand ${tenant.name}`,
      on: { click: () => this.toggle(tenant.id) },
    }, "▸");
    const count = h("span.count", { title: "direct children" }, String(tenant.child_count ?? 0));
    const row = h("div.node-row", { dataset: { tenantId: tenant.id } },
      twisty,
      h("a.node-name", { href: `#/tenants/${tenant.id}`, title: tenant.name }, tenant.name),
      h("span.node-slug", { title: tenant.slug }, tenant.slug),
      count,
      tenant.status === "archived" ? badge("archived", "archived") : null);
    const group = h("ul", { role: "group" });
    const item = h("li", {
      role: "treeitem", "aria-expanded": "false", "aria-level": String(level + 1),
      dataset: { tenantId: tenant.id, slug: tenant.slug },
      class: tenant.status === "archived" ? "is-archived" : "",
    }, row, group);
    const node = {
      tenant, childCount: tenant.child_count ?? 0, expanded: false, loaded: false,
      row, group, item, twisty, count, level, cursor: null,
    };
    if (node.childCount === 0) twisty.classList.add("leaf");
    this.nodes.set(tenant.id, node);
    return item;
  }

  async toggle(id) {
    const node = this.nodes.get(id);
    if (!node) return;
    if (node.expanded) {
      node.expanded = false;
      node.item.setAttribute("aria-expanded", "false");
      node.twisty.textContent = "▸";
      node.group.hidden = true;
    } else {
      await this.expand(node);
    }
  }

  async expand(node) {
    if (!node.loaded) await this.loadChildren(node);
    node.expanded = true;
    node.item.setAttribute("aria-expanded", "true");
    node.twisty.textContent = "▾";
    node.group.hidden = false;
  }

  async loadChildren(node, cursor) {
    try {
      const { data } = await get("/tenants", {
        parent_id: node.tenant.id, include_child_counts: true, limit: PAGE,
        status: this.statusFilter(), cursor,
      });
      remember(data.data);
      if (!cursor) fill(node.group);
      node.group.querySelector(":scope > li.more")?.remove();
      for (const tenant of data.data) node.group.append(this.renderNode(tenant, node.level + 1));
      if (data.has_more) {
        node.group.append(h("li.more", {},
          h("button.link", { type: "button", on: { click: () => this.loadChildren(node, data.next_cursor) } },
            "Load more")));
      }
      node.cursor = data.next_cursor;
      node.loaded = true;
      if (!cursor && !data.has_more) {
        // The count seen when the node was drawn may be stale: the children are here now.
        node.childCount = data.data.length;
        node.count.textContent = String(node.childCount);
        node.twisty.classList.toggle("leaf", node.childCount === 0);
      }
    } catch (err) {
      this.onError(err);
    }
  }

  // Expand the path from the top of the tree down to a tenant and select it.
  // `known` are the tenant's ancestors when the caller has them already (one call less).
  async reveal(tenantId, known = null) {
    let chain = null;
    try {
      const ancestors = known || (await get(`/tenants/${tenantId}/ancestors`)).data;
      chain = remember(ancestors).map((a) => a.id);
    } catch (err) {
      // An archived tenant has no ancestors endpoint (410): it is shown as far as loaded.
      if (err.code !== "TENANT_ARCHIVED") this.onError(err);
    }
    let parent = null;
    let reachable = chain !== null;
    for (const id of chain || []) {
      const node = await this.findChild(parent, id);
      if (!node) {
        reachable = false;
        break;
      }
      if (!node.expanded) await this.expand(node);
      parent = node;
    }
    if (reachable) await this.findChild(parent, tenantId);
    this.markSelected(tenantId);
    this.nodes.get(tenantId)?.row.scrollIntoView({ block: "nearest" });
  }

  // A child of `parent` (a root when parent is null), loading further pages as needed.
  async findChild(parent, id) {
    while (!this.nodes.has(id)) {
      const cursor = parent ? parent.cursor : this.rootCursor;
      if (!cursor || (parent && !parent.loaded)) break;
      if (parent) await this.loadChildren(parent, cursor);
      else await this.loadRoots(cursor);
      if ((parent ? parent.cursor : this.rootCursor) === cursor) break; // failed: do not spin
    }
    return this.nodes.get(id) || null;
  }

  markSelected(tenantId) {
    this.selected = tenantId;
    for (const node of this.nodes.values()) {
      const on = node.tenant.id === tenantId;
      node.row.classList.toggle("selected", on);
      node.item.setAttribute("aria-selected", on ? "true" : "false");
    }
  }

  // Mark the tenants a context value comes from; null clears the marks.
  highlight(tenantIds) {
    const wanted = new Set(tenantIds || []);
    for (const node of this.nodes.values()) {
      node.row.classList.toggle("source", wanted.has(node.tenant.id));
    }
  }

  async search() {
    const text = this.searchInput.value.trim();
    if (!text) {
      fill(this.results);
      return;
    }
    try {
      const { data } = await get("/tenants", { search: text, limit: 20, status: this.statusFilter() });
      remember(data.data);
      fill(this.results,
        data.data.length
          ? data.data.map((tenant) => h("li", {},
            h("a", { href: `#/tenants/${tenant.id}` }, tenant.name),
            " ", h("span.node-slug", {}, tenant.slug),
            tenant.status === "archived" ? badge("archived", "archived") : null))
          : h("li.empty", {}, `No tenant matches “${text}”.`),
        data.has_more ? h("li.empty", {}, "More matches exist: refine the search.") : null);
    } catch (err) {
      this.onError(err);
    }
  }
}
