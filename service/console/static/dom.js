// Building DOM nodes without HTML strings: every piece of data becomes a text node.
// The page's Content-Security-Policy enforces Trusted Types with no policy, so an
// innerHTML-style sink would throw anyway; this module never needs one.

import { labelOf } from "./api.js";

const SAFE_HREF = /^#|^\/console(\/|$)/;

// h("tag.class1.class2", {attributes, on: {event: handler}}, ...children)
// Children may be nodes, strings (added as text), numbers, null/undefined/false
// (skipped) or arrays of those.
export function h(spec, props = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.classList.add(...classes);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "on") {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler);
    } else if (name.toLowerCase().startsWith("on")) {
      throw new Error(`event handler attributes are not allowed: ${name}`);
    } else if (name === "href") {
      if (!SAFE_HREF.test(String(value))) throw new Error("only console links are allowed");
      el.setAttribute("href", String(value));
    } else if (name === "class") {
      el.classList.add(...String(value).split(/\s+/).filter(Boolean));
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "value" || name === "checked" || name === "disabled" ||
               name === "selected" || name === "hidden") {
      el[name] = value;
    } else if (name === "style") {
      throw new Error("inline styles are not allowed; use a class");
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Replace an element's content with the given children.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function badge(text, kind = "") {
  return h(`span.badge${kind ? "." + kind : ""}`, {}, text);
}

// JSON for display: as text, pretty-printed, never interpreted.
export function jsonText(value) {
  if (value === undefined) return "";
  return JSON.stringify(value, null, 2);
}

// A tenant by name and slug (labelOf), linking to its page, its whole id on hover.
export function tenantRef(id) {
  return h("a.tenant-ref", { href: `#/tenants/${id}`, title: String(id) }, labelOf(id));
}

export function shortId(id) {
  return id ? `${String(id).slice(0, 8)}…` : "";
}

export function when(timestamp) {
  if (!timestamp) return "—";
  return String(timestamp).replace("T", " ").replace("Z", " UTC");
}

// A labelled form field.
export function field(label, control, hint) {
  return h("label.field", {}, h("span.label", {}, label), control, hint ? h("small", {}, hint) : null);
}

// An element that shows an outcome: errors in red, successes in green.
export function messageBox() {
  const box = h("div.message", { role: "status", "aria-live": "polite" });
  box.show = (text, kind = "info") => {
    box.className = `message ${kind}`;
    box.textContent = text;
  };
  box.clear = () => {
    box.className = "message";
    box.textContent = "";
  };
  return box;
}

export function table(headers, rows, className = "") {
  return h(`table${className ? "." + className : ""}`, {},
    h("thead", {}, h("tr", {}, headers.map((head) => h("th", { scope: "col" }, head)))),
    h("tbody", {}, rows));
}

// Two-step confirmation without window.confirm: the first click arms the button.
export function confirmButton(label, confirmLabel, action, className = "danger") {
  const button = h(`button.${className}`, { type: "button" }, label);
  let armed = false;
  button.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      button.textContent = confirmLabel;
      button.classList.add("armed");
      return;
    }
    armed = false;
    button.textContent = label;
    button.classList.remove("armed");
    await action();
  });
  button.addEventListener("blur", () => {
    armed = false;
    button.textContent = label;
    button.classList.remove("armed");
  });
  return button;
}
