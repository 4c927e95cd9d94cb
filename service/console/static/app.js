// The console's entry point: sign-in, the layout (tree beside the current view), and a
// hash router (#/tenants/ID, #/tenants/ID/context, #/webhooks, #/audit, #/change-requests). Hashes carry
// ids only; the credential is never part of a URL.

import {
  clearCredential, get, identityLabel, keep, leavePage, loadCredential, onThrottled,
  onUnauthorized, post, remember, saveCredential,
} from "./api.js";
import { auditPage } from "./audit.js";
import { changeRequestsPage } from "./changes.js";
import { contextPage } from "./context.js";
import { draftChanges, forgetDrafts, onDraftChange } from "./draft.js";
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
          await keep("/tenants", { limit: 1 });
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
    "An sk_live_/sk_test_ key is sent as X-API-Key; anything else, such as an access ",
    "token from your identity provider, as Authorization: Bearer. ",
    "It is kept in this tab's session storage only and is forgotten when the tab closes."),
  h("button", { type: "submit" }, "Sign in"),
  message);
  fill(root, h("main.signin-page", {}, h("h1", {}, "Tenant Hierarchy Console"), form));
  input.focus();
}

function signOut(reason) {
  forgetDrafts();
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
        const session = app;
        try {
          const { data } = await post("/tenants", { name: name.value, slug: slug.value });
          if (app !== session) return; // signed out meanwhile
          remember([data]);
          session.notify(`Created root “${data.name}”.`, "success");
          await session.tree.reload();
          if (app === session) session.navigate(`#/tenants/${data.id}`);
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

// Which sections a credential can use: every page reads (GET needs read); the audit
// log is an admin route (read and admin).
const SECTIONS = [
  { hash: "#/", label: "Tenants", needs: ["read"] },
  { hash: "#/webhooks", label: "Webhooks", needs: ["read"] },
  { hash: "#/change-requests", label: "Change requests", needs: ["read"] },
  { hash: "#/audit", label: "Audit log", needs: ["read", "admin"] },
];
const usable = (section, scopes) => section.needs.every((scope) => scopes.includes(scope));

async function route() {
  // Until start() knows the credential's scopes it routes nothing: it routes once, to
  // the hash of that moment, so a page is never drawn twice or with the wrong scopes.
  if (!app || !app.started) return;
  // The pages below run for a while; the user may sign out meanwhile (app turns null).
  const session = app;
  leavePage();
  const hash = window.location.hash || "#/";
  const parts = hash.slice(1).split("/").filter(Boolean);
  const section = ["webhooks", "audit", "change-requests"].includes(parts[0]) ? `#/${parts[0]}` : "#/";
  for (const link of app.nav.querySelectorAll("a")) {
    link.classList.toggle("current", link.getAttribute("href") === section);
  }
  app.tree.highlight(null);
  // Each navigation renders into a container of its own, put in place at once: a page
  // still loading when the user moved on (slow, or waiting out a 429) then fills a
  // container nobody sees, never the page the user went to.
  const view = h("div.page");
  fill(app.view, view);
  const wanted = SECTIONS.find((s) => s.hash === section);
  if (app.scopes && !usable(wanted, app.scopes)) {
    fill(view, h("h2", {}, wanted.label),
      h("p.message.error", {}, `This credential cannot use the ${wanted.label.toLowerCase()}: it needs the ${wanted.needs.join(" and ")} scopes.`));
  } else if (parts[0] === "tenants" && parts[1] && !TENANT_ID.test(parts[1])) {
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
  } else if (parts[0] === "change-requests") {
    await changeRequestsPage(view, app);
  } else {
    homeView(view);
  }
  if (app === session && session.view.contains(view)) session.view.focus({ preventScroll: true });
}

// Notices live in a strip of their own under the header, never over the page's
// controls, and go away by themselves (errors stay longer, and can be closed).
function noticeBar() {
  const text = h("span.notice-text");
  const close = h("button.link.notice-close", { type: "button", "aria-label": "Dismiss", hidden: true }, "×");
  const notice = h("div.notice", { role: "status", "aria-live": "polite" }, text, close);
  const throttle = h("div.throttle", { role: "status", "aria-live": "polite", hidden: true });
  let timer = null;
  const hide = () => {
    clearTimeout(timer);
    notice.className = "notice";
    text.textContent = "";
    close.hidden = true;
  };
  close.addEventListener("click", hide);
  const notify = (message, kind = "info") => {
    clearTimeout(timer);
    notice.className = `notice ${kind} visible`;
    text.textContent = message;
    close.hidden = false;
    timer = setTimeout(hide, kind === "error" ? 9000 : 4000);
  };
  onThrottled((wait) => {
    throttle.hidden = !wait;
    throttle.textContent = wait
      ? `The service asked to slow down (too many requests): retrying in ${wait.seconds} s…`
      : "";
  });
  return { element: h("div.notices", {}, throttle, notice), notify };
}

// "name (sk_test_AbCd…) · read, write, admin": who is signed in, from GET /api/v1/me.
function identityText(me, credential) {
  if (!me) return identityLabel(credential);
  const who = me.kind === "api_key"
    ? `${me.name ?? "API key"} (${me.prefix ?? ""}…)`
    : `token for ${me.id}`;
  const scopes = me.scopes.length ? me.scopes.join(", ") : "no scopes";
  return `${who} · ${scopes}${me.tenant_id ? " · one subtree" : ""}`;
}

async function start() {
  const credential = loadCredential();
  if (!credential) {
    signInView();
    return;
  }
  const notices = noticeBar();
  const notify = notices.notify;
  const tree = new TreeBrowser((err) => notify(err.describe(), "error"));
  const nav = h("nav.main-nav", { "aria-label": "Sections" });
  const identity = h("span.identity", { id: "identity" }, identityText(null, credential));
  const view = h("main.view", { tabindex: "-1", id: "view" });
  // The change request being composed, counted where every page shows it.
  const draftCount = h("span.draft-count");
  const draftLink = h("a.draft-counter", { href: "#/change-requests", title: "Changes waiting in the change request being composed" },
    "Draft change request: ", draftCount);
  const showDraft = (changes) => {
    draftCount.textContent = String(changes.length);
    draftLink.hidden = changes.length === 0;
  };
  showDraft(draftChanges());
  onDraftChange(showDraft);
  const session = {
    tree, nav, view, notify, scopes: null, me: null, started: false,
    navigate(hash) {
      if (window.location.hash === hash) route();
      else window.location.hash = hash;
    },
  };
  app = session;
  fill(root,
    h("header.top", {},
      h("a.brand", { href: "#/" }, "Tenant Hierarchy Console"),
      nav,
      draftLink,
      identity,
      h("button.secondary", { type: "button", on: { click: () => signOut() } }, "Sign out")),
    notices.element,
    h("div.layout", {}, h("aside.sidebar", {}, tree.element), view));
  try {
    const { data: me } = await keep("/me");
    // Signed out (or in again) while it loaded: this session's page is gone.
    if (app !== session) return;
    session.me = me;
    session.scopes = me.scopes;
    identity.textContent = identityText(me, credential);
    identity.title = `${me.kind === "api_key" ? "API key" : "token"} ${me.id}`;
  } catch (err) {
    if (err.status === 401) return; // signed out by the listener below
    // An older service without /api/v1/me, or a credential without read: offer every page.
  }
  if (app !== session) return;
  fill(nav, SECTIONS.filter((s) => !session.scopes || usable(s, session.scopes))
    .map((s) => h("a", { href: s.hash }, s.label)));
  tree.reload().then(() => {
    if (app !== session) return; // signed out before the tree loaded
    session.started = true;
    return route();
  });
}

onUnauthorized((err) => app && signOut(`Signed out: the service refused the credential (${err.code}).`));
window.addEventListener("hashchange", route);
start();
