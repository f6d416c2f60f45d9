// The REST client. The access token lives in this module's memory only (never in storage a
// script of another origin or a later page could read); the refresh token is the API's
// httpOnly cookie (cookie mode, path /api/v1/auth), which this code never sees.

const BASE = "/api/v1";
// The API accepts the refresh cookie only with this header: a cross-site form cannot send it.
const CSRF = { "X-Burnbox-CSRF": "1" };

let accessToken = null;
let refreshing = null;

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

/** Call the API; an expired access token is refreshed once through the cookie. */
export async function api(method, path, body, headers = {}) {
  let response = await send(method, path, body, headers);
  if (response.status === 401 && accessToken && !path.startsWith("/auth/")) {
    if (await refresh()) response = await send(method, path, body, headers);
  }
  return parse(response);
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
    accessToken = null;
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
