// The change request being composed: the tenant page's forms add changes to it
// ("Add to change request" instead of save), the change-request page shows, trims and
// submits it. It lives in this tab's sessionStorage, one per credential (a digest of
// the credential names it), never in localStorage: it goes when the tab closes.

import { loadCredential } from "./api.js";

const PREFIX = "tenant-console.draft.";
const listeners = new Set();

// FNV-1a: only tells one credential's draft from another's, it protects nothing (the
// credential itself sits beside it in the same storage).
function digest(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

function storageKey() {
  const credential = loadCredential();
  return credential ? PREFIX + digest(credential.value) : null;
}

export function draftChanges() {
  const key = storageKey();
  if (!key) return [];
  try {
    const stored = JSON.parse(sessionStorage.getItem(key) || "[]");
    return Array.isArray(stored) ? stored : [];
  } catch {
    return [];
  }
}

function save(changes) {
  const key = storageKey();
  if (!key) return;
  if (changes.length) sessionStorage.setItem(key, JSON.stringify(changes));
  else sessionStorage.removeItem(key);
  listeners.forEach((listener) => listener(changes));
}

// Fields that are undefined are left out: the change carries what its form set.
export function addChange(change) {
  const clean = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
  const changes = [...draftChanges(), clean];
  save(changes);
  return changes.length;
}

export function removeChange(index) {
  const changes = draftChanges();
  changes.splice(index, 1);
  save(changes);
}

export function clearDraft() {
  save([]);
}

// Every draft of this tab (signing out forgets them, as it forgets the credential).
export function forgetDrafts() {
  for (const key of Object.keys(sessionStorage)) {
    if (key.startsWith(PREFIX)) sessionStorage.removeItem(key);
  }
  listeners.forEach((listener) => listener([]));
}

export function onDraftChange(listener) {
  listeners.add(listener);
}

// datetime-local (read as UTC) to RFC 3339; "" to undefined.
export function utcInstant(value) {
  if (!value) return undefined;
  return `${value.length === 16 ? `${value}:00` : value}Z`;
}

// "in 2 h 5 min", "in 3 d 4 h", "due now": the time left until an instant.
export function timeLeft(timestamp, now = Date.now()) {
  const ms = Date.parse(timestamp) - now;
  if (!Number.isFinite(ms)) return "";
  if (ms <= 0) return "due now";
  const minutes = Math.floor(ms / 60000);
  if (minutes < 1) return "in less than a minute";
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const mins = minutes % 60;
  if (days) return `in ${days} d${hours ? ` ${hours} h` : ""}`;
  if (hours) return `in ${hours} h${mins ? ` ${mins} min` : ""}`;
  return `in ${mins} min`;
}
