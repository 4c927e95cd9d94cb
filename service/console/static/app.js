// The console's entry point: sign-in, the layout (tree beside the current view), and a
// hash router (#/tenants/ID, #/tenants/ID/context, #/webhooks, #/audit). Hashes carry
// ids only; the credential is never part of a URL.

import {
  clearCredential, get, loadCredential, onUnauthorized, post, remember, saveCredential,
} from "./api.js";
import { auditPage } from "./audit.js";
import { contextPage } from "./context.js";
import { field, fill, h, messageBox } from "./dom.js";
import { tenantPage } from "./tenant.js";
import { TreeBrowser } from "./tree.js";
import { webhooksPage } from "./webhooks.js";

const root = document.getElementById("app");
const TENANT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
let app = null; // the signed-in console: tree, view, navigation and notices

function signInView(reason) {
  const message = messageBox();
  if (reason) message.show(reason, "error");
  const input = h("input", {
    type: "password", name: "credential", id: "credential", autocomplete: "off",
    spellcheck: "false", required: true, "aria-describedby": "credential-hint",
  });
  const form = h("form.signin", {
    "aria-label": "Sign in",
    on: {
      submit: async (event) => {
        event.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        saveCredential(value);
        input.value = "";
        try {
          await get("/tenants", { limit: 1 });
        } catch (err) {
          // 403 still proves the credential: the key just cannot list tenants.
          if (err.status === 401 || err.status === 0) {
            clearCredential();
            message.show(`Sign-in refused: ${err.describe()}`, "error");
            return;
          }
        }
        start();
      },
    },
  },
  field("API key or bearer token", input),
  h("p.hint", { id: "credential-hint" },
    "An sk_live_/sk_test_ key is sent as X-API-Key, anything else as a Bearer token. ",
    "It is kept in this tab's session storage only and is forgotten when the tab closes."),
  h("button", { type: "submit" }, "Sign in"),
  message);
  fill(root, h("main.signin-page", {}, h("h1", {}, "Tenant Hierarchy Console"), form));
  input.focus();
}

function signOut(reason) {
  clearCredential();
  app = null;
  window.location.hash = "";
  signInView(reason);
}

function homeView(view) {
  const message = messageBox();
  const name = h("input", { name: "root-name", required: true, maxlength: "255" });
  const slug = h("input", { name: "root-slug", required: true, pattern: "[a-z][a-z0-9_]{0,62}", maxlength: "63" });
  const form = h("form.stack", {
    "aria-label": "Create a root tenant",
    on: {
      submit: async (event) => {
        event.preventDefault();
        try {
          const { data } = await post("/tenants", { name: name.value, slug: slug.value });
          remember([data]);
          app.notify(`Created root “${data.name}”.`, "success");
          await app.tree.reload();
          app.navigate(`#/tenants/${data.id}`);
        } catch (err) {
          message.show(`Cannot create: ${err.describe()}`, "error");
        }
      },
    },
  },
  field("Name", name),
  field("Slug", slug, "lowercase letters, digits and _; starts with a letter"),
  h("button", { type: "submit" }, "Create root tenant"),
  message);
  fill(view,
    h("header.page-head", {}, h("h2", {}, "Tenants")),
    h("p", {}, "Pick a tenant in the tree, search by slug or name, or create a new root."),
    h("section.card", { "aria-labelledby": "new-root-title" }, h("h3", { id: "new-root-title" }, "New root tenant"), form));
}

async function route() {
  if (!app) return;
  const hash = window.location.hash || "#/";
  const parts = hash.slice(1).split("/").filter(Boolean);
  const section = parts[0] === "webhooks" || parts[0] === "audit" ? `#/${parts[0]}` : "#/";
  for (const link of app.nav.querySelectorAll("a")) {
    link.classList.toggle("current", link.getAttribute("href") === section);
  }
  app.tree.highlight(null);
  const view = app.view;
  if (parts[0] === "tenants" && parts[1] && !TENANT_ID.test(parts[1])) {
    // Only ids reach API paths: a crafted link cannot point the console elsewhere.
    fill(view, h("h2", {}, "Tenant"), h("p.message.error", {}, "That link does not name a tenant id."));
  } else if (parts[0] === "tenants" && parts[1] && parts[2] === "context") {
    await contextPage(view, parts[1], app);
  } else if (parts[0] === "tenants" && parts[1]) {
    await tenantPage(view, parts[1], app);
  } else if (parts[0] === "webhooks") {
    await webhooksPage(view, app);
  } else if (parts[0] === "audit") {
    await auditPage(view, app);
  } else {
    homeView(view);
  }
  view.focus({ preventScroll: true });
}

function start() {
  const credential = loadCredential();
  if (!credential) {
    signInView();
    return;
  }
  const toast = h("div.toast", { role: "status", "aria-live": "polite" });
  let toastTimer = null;
  const notify = (text, kind = "info") => {
    toast.className = `toast ${kind} visible`;
    toast.textContent = text;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => toast.classList.remove("visible"), 6000);
  };
  const tree = new TreeBrowser((err) => notify(err.describe(), "error"));
  const nav = h("nav.main-nav", { "aria-label": "Sections" },
    h("a", { href: "#/" }, "Tenants"), h("a", { href: "#/webhooks" }, "Webhooks"), h("a", { href: "#/audit" }, "Audit log"));
  const view = h("main.view", { tabindex: "-1", id: "view" });
  app = {
    tree, nav, view, notify,
    navigate(hash) {
      if (window.location.hash === hash) route();
      else window.location.hash = hash;
    },
  };
  fill(root,
    h("header.top", {},
      h("a.brand", { href: "#/" }, "Tenant Hierarchy Console"),
      nav,
      h("span.identity", {}, credential.kind === "api_key" ? "Signed in with an API key" : "Signed in with a bearer token"),
      h("button.secondary", { type: "button", on: { click: () => signOut() } }, "Sign out")),
    h("div.layout", {}, h("aside.sidebar", {}, tree.element), view),
    toast);
  tree.reload().then(route);
}

onUnauthorized((err) => app && signOut(`Signed out: the service refused the credential (${err.code}).`));
window.addEventListener("hashchange", route);
start();
