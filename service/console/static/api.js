// The public API, called with the key or token the user pasted in. The credential lives
// in sessionStorage only (gone when the tab closes), is sent in a header, and is never
// put into a URL, localStorage, a cookie or the page.

const STORAGE_KEY = "tenant-console.credential";
const API_KEY = /^sk_(live|test)_[A-Za-z0-9]+$/;
const UUID_IN_TEXT = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || (status === 0 ? "NETWORK_ERROR" : `HTTP_${status}`);
    this.details = error.details || [];
    this.requestId = error.request_id || null;
    this.body = body; // the whole answer: some errors carry more (IMPACT_DRIFT's drift)
  }

  // "message (CODE)" plus every field detail the message does not already say, for
  // showing to a person. Tenant ids the console knows a name for (a lock's ancestor,
  // say) are shown by name and slug.
  describe() {
    const unsaid = this.details.filter((d) => !this.message.includes(`${d.field}: ${d.message}`));
    const detail = unsaid.length ? ` [${unsaid.map((d) => `${d.field}: ${d.message}`).join("; ")}]` : "";
    const message = this.message.replace(UUID_IN_TEXT, (id) => (names.has(id) ? `“${labelOf(id)}”` : id));
    return `${message}${detail} (${this.code})`;
  }
}

export function credentialKind(text) {
  return API_KEY.test(text) ? "api_key" : "bearer";
}

// A token copied with its scheme ("Bearer eyJ...") is the token.
export function normalizeCredential(text) {
  return text.trim().replace(/^bearer\s+/i, "");
}

// The subject (and issuer) a JWT names, for showing who is signed in. Display only:
// the service verifies the token, the console never trusts what it reads here.
export function tokenIdentity(token) {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), "=")), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    const text = (value) => (typeof value === "string" && value ? value.slice(0, 255) : null);
    return { subject: text(claims.sub), issuer: text(claims.iss) };
  } catch {
    return { subject: null, issuer: null };
  }
}

export function identityLabel(credential) {
  if (credential.kind === "api_key") return "Signed in with an API key";
  const { subject, issuer } = tokenIdentity(credential.value);
  if (!subject) return "Signed in with a bearer token";
  let host = null;
  try {
    host = issuer ? new URL(issuer).host : null;
  } catch {
    host = null;
  }
  return host ? `Signed in as ${subject} (${host})` : `Signed in as ${subject}`;
}

export function saveCredential(text) {
  const value = normalizeCredential(text);
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify({ kind: credentialKind(value), value }));
}

export function loadCredential() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "null");
    return stored && typeof stored.value === "string" ? stored : null;
  } catch {
    return null;
  }
}

export function clearCredential() {
  sessionStorage.removeItem(STORAGE_KEY);
}

function authHeaders() {
  const credential = loadCredential();
  if (!credential) return {};
  return credential.kind === "api_key"
    ? { "X-API-Key": credential.value }
    : { Authorization: `Bearer ${credential.value}` };
}

export function queryString(params = {}) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "" || value === false) continue;
    search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// Listeners told when the server refuses the credential (expired, revoked).
const unauthorizedListeners = new Set();
export function onUnauthorized(listener) {
  unauthorizedListeners.add(listener);
}

// Listeners told when the service asks to slow down (429): ({seconds}) while waiting
// before a retry, (null) once an answer came through. A 429 means the request was
// refused before any work, so repeating it is safe for every method.
const throttleListeners = new Set();
export function onThrottled(listener) {
  throttleListeners.add(listener);
}
// Waiting stops (and the 429 is shown) only after this long: a person will have left.
const MAX_THROTTLED_WAIT_MS = 120_000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function retryAfterSeconds(response) {
  const seconds = Number.parseInt(response.headers.get("Retry-After") || "", 10);
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 120) : 1;
}

// The page on screen: the router calls leavePage() on every navigation. A request of a
// page the person left is not sent or retried any more (it would spend the rate limit
// the page they are on needs); it never settles, so nothing of that page is shown. The
// tree beside every page asks with `keep` and is never dropped.
let page = 0;
export function leavePage() {
  page += 1;
}
const abandoned = () => new Promise(() => {});
// After a 429 every request waits for the same moment (the Retry-After): the console
// backs off as one client instead of each request retrying on its own.
let resumeAt = 0;
async function ourTurn() {
  while (Date.now() < resumeAt) await sleep(resumeAt - Date.now());
}

// One API call: {data, status, headers}; an error answer throws ApiError. A 429 is
// waited out (Retry-After) and retried, with a visible note, so the page never goes
// blank because someone clicked briskly.
export async function call(method, path, options = {}) {
  const started = Date.now();
  const mine = page;
  for (let tries = 1; ; tries += 1) {
    await ourTurn();
    if (!options.keep && mine !== page) return abandoned();
    try {
      const answer = await callOnce(method, path, options);
      if (tries > 1) throttleListeners.forEach((listener) => listener(null));
      return answer;
    } catch (err) {
      const late = Date.now() - started > MAX_THROTTLED_WAIT_MS;
      if (!(err instanceof ThrottledError) || late) {
        if (tries > 1) throttleListeners.forEach((listener) => listener(null));
        throw err instanceof ThrottledError ? err.error : err;
      }
      resumeAt = Math.max(resumeAt, Date.now() + err.seconds * 1000);
      throttleListeners.forEach((listener) => listener({ seconds: err.seconds }));
    }
  }
}

class ThrottledError extends Error {
  constructor(error, seconds) {
    super(error.message);
    this.error = error;
    this.seconds = seconds;
  }
}

async function callOnce(method, path, { query, body, headers = {} } = {}) {
  const init = {
    method,
    headers: { Accept: "application/json", ...authHeaders(), ...headers },
    credentials: "omit",
    cache: "no-store",
    referrerPolicy: "no-referrer",
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(`/api/v1${path}${queryString(query)}`, init);
  } catch (err) {
    throw new ApiError(0, { error: { message: `the service did not answer: ${err.message}` } });
  }
  const text = response.status === 204 || response.status === 304 ? "" : await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok && response.status !== 304) {
    const error = new ApiError(response.status, data);
    if (response.status === 429) throw new ThrottledError(error, retryAfterSeconds(response));
    if (response.status === 401) unauthorizedListeners.forEach((listener) => listener(error));
    throw error;
  }
  return { data, status: response.status, headers: response.headers };
}

export const get = (path, query, headers) => call("GET", path, { query, headers });
// A read that outlives the page (the tree, who is signed in).
export const keep = (path, query) => call("GET", path, { query, keep: true });
export const post = (path, body, options = {}) => call("POST", path, { body, ...options });
export const put = (path, body) => call("PUT", path, { body });
export const patch = (path, body, headers) => call("PATCH", path, { body, headers });
export const del = (path, headers) => call("DELETE", path, { headers });

// RFC 7396: the merge patch that turns `before` into `after` (objects recurse, a
// removed member becomes null, anything else is replaced whole).
export function mergePatch(before, after) {
  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  if (!isObject(before) || !isObject(after)) return after;
  const patch = {};
  for (const key of Object.keys(before)) {
    if (!(key in after)) patch[key] = null;
  }
  for (const [key, value] of Object.entries(after)) {
    if (!(key in before)) {
      patch[key] = value;
    } else if (JSON.stringify(before[key]) !== JSON.stringify(value)) {
      patch[key] = isObject(before[key]) && isObject(value) ? mergePatch(before[key], value) : value;
    }
  }
  return patch;
}

// Tenant names by id, filled by every answer that carries tenants.
export const names = new Map();
const slugs = new Map();
export function remember(tenants) {
  for (const tenant of tenants) {
    names.set(tenant.id, tenant.name);
    if (tenant.slug) slugs.set(tenant.id, tenant.slug);
  }
  return tenants;
}
// A tenant's name, else its whole id: ids made in the same minute share their first
// characters, so a shortened one names nothing.
export function nameOf(id) {
  return names.get(id) || String(id);
}
// "Name (slug)" when known, for lists where names may repeat.
export function labelOf(id) {
  const name = names.get(id);
  if (!name) return String(id);
  return slugs.has(id) ? `${name} (${slugs.get(id)})` : name;
}
// Learn the names of the tenants these ids name (at most 25 at a time), so previews and
// the audit log can show names; a tenant the credential cannot read stays an id.
export async function learnNames(ids) {
  const unknown = [...new Set(ids.filter((id) => id && !names.has(id)))].slice(0, 25);
  await Promise.all(unknown.map((id) => get(`/tenants/${id}`, { include_archived: true })
    .then((answer) => remember([answer.data]))
    .catch(() => null)));
}
