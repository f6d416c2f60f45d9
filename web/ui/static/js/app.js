// The shell: restores the session from the refresh cookie, draws the navigation and routes
// the path to a view. Links inside the app are followed without a page load (history API).

import { api, logout, refresh, signedIn } from "./api.js";
import { clearNotices, fill, h, notify, setPreferences } from "./dom.js";
import { loginView, sessionLimitView, setupView } from "./auth.js";
import { emailRedirect, inboxView, inboxesView } from "./inboxes.js";
import { showShortcuts } from "./keys.js";
import { keysView, teamDomainsView, teamsView, webhooksView } from "./teams.js";
import { orgView } from "./orgs.js";
import { orgAnalyticsView, teamAnalyticsView } from "./analytics.js";
import { tryView } from "./try.js";
import { accountView } from "./account.js";
import { adminOrgsView, adminPlatformView, adminStatsView, adminUsersView } from "./admin.js";
import { adminSsoView } from "./admin-sso.js";
import { notificationsLink, notificationsView, stopNotifications } from "./notifications.js";

const main = document.getElementById("main");
let leaving = [];
// A view that can follow some paths without being drawn again (the inbox opening one of its
// e-mails keeps its list, scroll position and selection): `(path) => true` when it did.
let inPlace = null;

/** Views call this with a function to run when the page changes (close sockets, timers). */
export function onLeave(cleanup) {
  leaving.push(cleanup);
}

/** The current view follows the paths `handle(path)` accepts (returns true) in place. */
export function stayFor(handle) {
  inPlace = handle;
}

/** Navigate to `path`; `notice`, if given, is shown on the page arrived at (notices of the
 * page left behind are cleared). */
export function go(path, notice = null) {
  history.pushState(null, "", path);
  route().then(() => notice && notify(notice));
}

/** The tab's title for the page `page` (a view's container), while it is the one shown. */
export function setTitle(page, text) {
  page.dataset.title = text;
  if (page.isConnected) document.title = `${text} · Burnbox`;
}

const PUBLIC = [
  [/^\/setup$/, setupView],
  [/^\/login$/, loginView],
  [/^\/session-limit$/, sessionLimitView],
  [/^\/try$/, tryView],
];
const PRIVATE = [
  [/^\/$/, inboxesView],
  [/^\/inboxes$/, inboxesView],
  [/^\/inboxes\/([\w-]+)$/, inboxView],
  [/^\/inboxes\/([\w-]+)\/emails\/([\w-]+)$/, inboxView],
  [/^\/emails\/([\w-]+)$/, emailRedirect],
  [/^\/notifications$/, notificationsView],
  [/^\/teams$/, teamsView],
  [/^\/orgs\/([\w-]+)$/, orgView],
  [/^\/orgs\/([\w-]+)\/analytics$/, orgAnalyticsView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/analytics$/, teamAnalyticsView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/keys$/, keysView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/domains$/, teamDomainsView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/webhooks$/, webhooksView],
  [/^\/account$/, accountView],
  [/^\/profile$/, accountView],
  [/^\/admin$/, adminStatsView],
  [/^\/admin\/users$/, adminUsersView],
  [/^\/admin\/orgs$/, adminOrgsView],
  [/^\/admin\/platform$/, adminPlatformView],
  [/^\/admin\/sso$/, adminSsoView],
];
let me = null;

/** The signed-in user (`GET /auth/me`), asked once per sign-in; null when it failed. */
export function whoAmI() {
  me ||= api("GET", "/auth/me").catch(() => { me = null; return null; });
  return me;
}

/** Ask `GET /auth/me` again at the next page (the user changed their own account). */
export function forgetMe() {
  me = null;
}

function drawNav() {
  const nav = document.getElementById("nav");
  if (!signedIn()) {
    me = null;  // the next sign-in may be someone else
    return fill(nav);
  }
  // Only a system administrator sees the link (the admin API refuses everyone else anyway).
  const admin = h("a", { href: "/admin", hidden: true }, "Admin");
  whoAmI().then((user) => { admin.hidden = !user?.is_system_admin; });
  fill(nav,
    h("a", { href: "/inboxes" }, "Inboxes"),
    h("a", { href: "/teams" }, "Teams"),
    notificationsLink(),
    admin,
    // The user's own links sit at the far end: the Admin link and the unread count, which
    // show only once their answers arrive, then cannot move them from under a pointer (or a
    // test's click) already on its way.
    h("span", { class: "end" },
      h("a", { href: "/account" }, "Account"),
      h("button", { type: "button", class: "link", onclick: async () => {
        stopNotifications();
        me = null;
        try { await logout(); } finally { go("/login"); }
      } }, "Sign out")));
}

async function route() {
  const path = location.pathname;
  if (inPlace && inPlace(path)) return;
  inPlace = null;
  for (const cleanup of leaving.splice(0)) cleanup();
  clearNotices();
  drawNav();
  for (const [pattern, view] of PUBLIC) {
    const match = path.match(pattern);
    if (match) return render(view, match.slice(1));
  }
  if (!signedIn()) {
    const { completed } = await api("GET", "/setup/status");
    return go(completed ? "/login" : "/setup");
  }
  // Dates are shown in the user's zone and formats from the first page on.
  setPreferences(await whoAmI());
  for (const [pattern, view] of PRIVATE) {
    const match = path.match(pattern);
    if (match) return render(view, match.slice(1));
  }
  fill(main, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "/" }, "Back to the inboxes")));
}

async function render(view, params) {
  // Each page draws into its own container. A view still waiting on the API when the user
  // moves on then writes into a container that is no longer in the document, instead of
  // drawing the old page over the new one.
  const page = h("div", { class: "page" }, h("p", {}, "Loading…"));
  fill(main, page);
  try {
    await view(page, ...params);
  } catch (error) {
    fill(page, h("h1", {}, "Something went wrong"), h("p", { class: "error", role: "alert" }, error.message));
  }
  if (page.isConnected) {
    document.title = `${page.dataset.title || (page.querySelector("h1") || {}).textContent || "Burnbox"} · Burnbox`;
  }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || link.target || link.hasAttribute("download") || event.ctrlKey || event.metaKey) return;
  const url = new URL(link.href);
  if (url.origin !== location.origin || url.pathname.startsWith("/api/")) return;
  event.preventDefault();
  go(url.pathname + url.search);
});
window.addEventListener("popstate", route);
document.addEventListener("keydown", (event) => {
  if (event.key === "?" && !typing(event)) showShortcuts();
});

/** True when the key goes to a control (a field, a list of choices) or has a modifier. */
export function typing(event) {
  const target = event.target;
  return event.ctrlKey || event.metaKey || event.altKey || target.isContentEditable
    || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName);
}

// The server marks the page when the browser may hold a session (web/ui: the session hint
// cookie); otherwise there is nothing to restore, and no refresh call to fail.
const mayHaveSession = document.documentElement.hasAttribute("data-session");
(mayHaveSession ? refresh() : Promise.resolve(false)).then(route).catch((error) => {
  // A 429 (the message says when to try again) or no answer: the session is still there.
  fill(main, h("h1", {}, "Burnbox"), h("p", { class: "error", role: "alert" }, error.message),
    h("p", {}, h("button", { type: "button", onclick: () => location.reload() }, "Try again")));
});
