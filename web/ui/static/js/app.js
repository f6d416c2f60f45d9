// The shell: restores the session from the refresh cookie, draws the navigation and routes
// the path to a view. Links inside the app are followed without a page load (history API).

import { api, logout, refresh, signedIn } from "./api.js";
import { fill, h, notify } from "./dom.js";
import { loginView, sessionLimitView, setupView } from "./auth.js";
import { inboxView, inboxesView } from "./inboxes.js";
import { emailView } from "./email.js";
import { keysView, teamDomainsView, teamsView, webhooksView } from "./teams.js";
import { orgView } from "./orgs.js";
import { tryView } from "./try.js";
import { accountView } from "./account.js";
import { adminOrgsView, adminPlatformView, adminStatsView, adminUsersView } from "./admin.js";
import { notificationsLink, notificationsView, stopNotifications } from "./notifications.js";

const main = document.getElementById("main");
let leaving = [];

/** Views call this with a function to run when the page changes (close sockets, timers). */
export function onLeave(cleanup) {
  leaving.push(cleanup);
}

export function go(path) {
  history.pushState(null, "", path);
  route();
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
  [/^\/emails\/([\w-]+)$/, emailView],
  [/^\/notifications$/, notificationsView],
  [/^\/teams$/, teamsView],
  [/^\/orgs\/([\w-]+)$/, orgView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/keys$/, keysView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/domains$/, teamDomainsView],
  [/^\/teams\/([\w-]+)\/([\w-]+)\/webhooks$/, webhooksView],
  [/^\/account$/, accountView],
  [/^\/profile$/, accountView],
  [/^\/admin$/, adminStatsView],
  [/^\/admin\/users$/, adminUsersView],
  [/^\/admin\/orgs$/, adminOrgsView],
  [/^\/admin\/platform$/, adminPlatformView],
];
let me = null;

/** The signed-in user (`GET /auth/me`), asked once per sign-in; null when it failed. */
function whoAmI() {
  me ||= api("GET", "/auth/me").catch(() => { me = null; return null; });
  return me;
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
  for (const cleanup of leaving.splice(0)) cleanup();
  const path = location.pathname;
  drawNav();
  for (const [pattern, view] of PUBLIC) {
    const match = path.match(pattern);
    if (match) return render(view, match.slice(1));
  }
  if (!signedIn()) {
    const { completed } = await api("GET", "/setup/status");
    return go(completed ? "/login" : "/setup");
  }
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
    document.title = `${(page.querySelector("h1") || {}).textContent || "Burnbox"} · Burnbox`;
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

refresh().then(route).catch((error) => notify(error.message));
