// The REST client. The access token lives in this module's memory only (never in storage a
// script of another origin or a later page could read); the refresh token is the API's
// httpOnly cookie (cookie mode, path /api/v1/auth), which this code never sees.

const BASE = "/api/v1";
// The API accepts the refresh cookie only with this header: a cross-site form cannot send it.
const CSRF = { "X-Burnbox-CSRF": "1" };

let accessToken = null;
let refreshing = null;

// A refused call (429) waits for the end of the window it was given, and so does every call
// made meanwhile: hammering a spent bucket only spends the next one. At most this many waits
// per call, then the 429 is the caller's to show.
const MAX_WAITS = 3;
let pausedUntil = 0;
let onPause = () => {};

/** An API answer that was not 2xx: `message` is the envelope's `error`; a 429 says when to
 * try again (its `Retry-After`, in seconds, also in `retryAfter`). */
export class ApiError extends Error {
  constructor(status, body, retryAfter = null) {
    super(status === 429 ? `Too many requests: try again in ${retryAfter || "a few"} second${retryAfter === 1 ? "" : "s"}.`
      : (body && body.error) || `request failed (HTTP ${status})`);
    this.status = status;
    this.code = body && body.code;
    this.body = body || {};
    this.retryAfter = retryAfter;
  }
}

export function signedIn() {
  return accessToken !== null;
}

/** Keep the access token of a sign-in answer (`{tokens}`) in memory. */
export function keepTokens(tokens) {
  accessToken = tokens.access_token;
}

export function forget() {
  accessToken = null;
  forgetReads();
}

/** `callback(seconds)` runs when calls start waiting out a 429 (`seconds` until they are
 * sent again), `callback(null)` when a call went through after a wait. */
export function onSlowDown(callback) {
  onPause = callback;
}

/** How long a 429 asks to wait, in milliseconds: its `Retry-After` (seconds), else its
 * `X-RateLimit-Reset` (Unix seconds) against the answer's own `Date`, so the browser's clock
 * does not matter; 5 s when it says neither. */
function waitOf(response) {
  const after = Number(response.headers.get("Retry-After"));
  if (after > 0) return after * 1000;
  const reset = Number(response.headers.get("X-RateLimit-Reset"));
  const date = Date.parse(response.headers.get("Date") || "");
  return reset && date ? Math.max(1000, reset * 1000 - date) : 5000;
}

async function waitOut() {
  const left = pausedUntil - Date.now();
  if (left <= 0) return false;
  onPause(Math.ceil(left / 1000));
  await new Promise((resolve) => setTimeout(resolve, left));
  return true;
}

// Reads that rarely change (the user's own record, the domains they may use, their orgs and
// teams, the roles), kept in this tab's sessionStorage for READ_MS so a reload does not ask
// again. They belong to one sign-in (the access token's session id) and are dropped at
// sign-out and by any write of this tab that may change them; never a token or a secret.
const READS = "burnbox.reads";
const READ_MS = 60000;
// Writes that change none of the kept reads: the rest drop them all.
const HARMLESS = [/^\/ws\/ticket$/, /^\/inboxes(\/|$|\?)/, /^\/emails\//, /^\/notifications/];

function sessionOf(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sid || null;
  } catch {
    return null;
  }
}

function keptReads() {
  try {
    const kept = JSON.parse(sessionStorage.getItem(READS));
    if (kept && kept.sid === sessionOf(accessToken)) return kept;
  } catch { /* unreadable: start again */ }
  return { sid: sessionOf(accessToken), reads: {} };
}

/** GET `path`, answered from this tab's kept reads when asked less than READ_MS ago in the
 * same sign-in; for reads that rarely change only. */
export async function cachedGet(path) {
  const kept = keptReads();
  const hit = kept.reads[path];
  const age = hit ? Date.now() - hit.at : Infinity;
  if (kept.sid && age >= 0 && age < READ_MS) return hit.body;
  const body = await api("GET", path);
  const fresh = keptReads();  // another read may have been kept meanwhile
  if (fresh.sid) {
    fresh.reads[path] = { at: Date.now(), body };
    try {
      sessionStorage.setItem(READS, JSON.stringify(fresh));
    } catch { /* storage full or off: the read was still answered */ }
  }
  return body;
}

/** Drop the kept reads whose path starts with `prefix` (all of them without one). */
export function forgetReads(prefix = "") {
  if (!prefix) return sessionStorage.removeItem(READS);
  const kept = keptReads();
  for (const path of Object.keys(kept.reads)) if (path.startsWith(prefix)) delete kept.reads[path];
  sessionStorage.setItem(READS, JSON.stringify(kept));
}

async function send(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: "same-origin" };
  if (accessToken) init.headers.Authorization = `Bearer ${accessToken}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  return fetch(BASE + path, init);
}

async function parse(response) {
  const type = response.headers.get("Content-Type") || "";
  const body = type.includes("json") ? await response.json() : null;
  if (!response.ok) {
    const retryAfter = Number(response.headers.get("Retry-After")) || null;
    throw new ApiError(response.status, body, retryAfter);
  }
  return body;
}

/** Trade the refresh cookie for a new access token; false when there is no live session.
 * A 429 is thrown (an ApiError saying when to retry), and so is a refresh that got no answer
 * (the network, or a reload that aborted it): the session may well be alive, and showing the
 * sign-in page then made a quick reload look like a sign-out. */
export function refresh() {
  refreshing ??= send("POST", "/auth/refresh", { use_cookie: true }, CSRF)
    .then(async (response) => {
      if (response.status === 429) return parse(response);
      if (!response.ok) { accessToken = null; return false; }
      keepTokens((await response.json()).tokens);
      return true;
    }, () => { throw new Error("The server did not answer: check the connection, then try again."); })
    .finally(() => { refreshing = null; });
  return refreshing;
}

/** Call the API; an expired access token is refreshed once through the cookie. A 429 is
 * waited out (its `Retry-After`) and the call sent again, up to MAX_WAITS times: what the
 * page shows stays, and a notice says it is slowing down (`onSlowDown`). */
export async function api(method, path, body, headers = {}) {
  let waited = await waitOut();
  for (let refused = 0; ; refused += 1) {
    let response = await send(method, path, body, headers);
    if (response.status === 401 && accessToken && !path.startsWith("/auth/")) {
      if (await refresh()) response = await send(method, path, body, headers);
    }
    if (response.status === 429 && refused < MAX_WAITS) {
      pausedUntil = Math.max(pausedUntil, Date.now() + waitOf(response));
      waited = await waitOut();
      continue;
    }
    if (waited && response.status !== 429) onPause(null);
    if (response.ok && method !== "GET" && !HARMLESS.some((harmless) => harmless.test(path))) {
      forgetReads();
    }
    return parse(response);
  }
}

/** Sign-in calls (login, resolve, setup) answer tokens; keep them, in cookie mode. */
export async function signIn(path, body) {
  const answer = await parse(await send("POST", path, { ...body, use_cookie: true }));
  keepTokens(answer.tokens);
  return answer;
}

export async function logout() {
  try {
    await parse(await send("POST", "/auth/logout", {}, CSRF));
  } finally {
    forget();
  }
}

/** A download of an authenticated resource as a Blob (attachments). */
export async function download(path) {
  let response = await send("GET", path);
  if (response.status === 401 && (await refresh())) response = await send("GET", path);
  if (!response.ok) await parse(response);
  return response.blob();
}

/** Open a WebSocket stream (`/ws/...`) with a fresh single-use ticket. */
export async function openStream(path, since = null) {
  const { ticket } = await api("POST", "/ws/ticket");
  const query = new URLSearchParams({ ticket });
  if (since !== null) query.set("since", since);
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return new WebSocket(`${scheme}//${location.host}${BASE}${path}?${query}`);
}
