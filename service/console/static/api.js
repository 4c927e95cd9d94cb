// The public API, called with the key or token the user pasted in. The credential lives
// in sessionStorage only (gone when the tab closes), is sent in a header, and is never
// put into a URL, localStorage, a cookie or the page.

const STORAGE_KEY = "tenant-console.credential";
const API_KEY = /^sk_(live|test)_[A-Za-z0-9]+$/;

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || (status === 0 ? "NETWORK_ERROR" : `HTTP_${status}`);
    this.details = error.details || [];
    this.requestId = error.request_id || null;
  }

  // "message (CODE)" plus the first field detail, for showing to a person.
  describe() {
    const detail = this.details.length ? ` [${this.details[0].field}: ${this.details[0].message}]` : "";
    return `${this.message}${detail} (${this.code})`;
  }
}

export function credentialKind(text) {
  return API_KEY.test(text) ? "api_key" : "bearer";
}

export function saveCredential(text) {
  const value = text.trim();
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

// One API call: {data, status, headers}; an error answer throws ApiError.
export async function call(method, path, { query, body, headers = {} } = {}) {
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
    if (response.status === 401) unauthorizedListeners.forEach((listener) => listener(error));
    throw error;
  }
  return { data, status: response.status, headers: response.headers };
}

export const get = (path, query, headers) => call("GET", path, { query, headers });
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
export function remember(tenants) {
  for (const tenant of tenants) names.set(tenant.id, tenant.name);
  return tenants;
}
export function nameOf(id) {
  return names.get(id) || `${String(id).slice(0, 8)}…`;
}
