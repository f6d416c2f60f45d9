// The shell: restores the session from the refresh cookie, draws the navigation and routes
// the path to a view. Links inside the app are followed without a page load (history API).

import { api, cachedGet, forgetReads, logout, onSlowDown, refresh, signedIn } from "./api.js";
import { clearNotices, fill, h, notify, setPreferences, slowNotice } from "./dom.js";
import { loginView, sessionLimitView, setupView } from "./auth.js";
import { emailRedirect, inboxView, inboxesView } from "./inboxes.js";
import { showShortcuts } from "./keys.js";
import { tagsView } from "./tags.js";
import { keysView, teamDomainsView, teamsView, webhooksView } from "./teams.js";
import { orgView } from "./orgs.js";
import { orgAnalyticsView, teamAnalyticsView } from "./analytics.js";
import { tryView } from "./try.js";
import { accountView } from "./account.js";
import { adminOrgsView, adminPlatformView, adminStatsView, adminUsersView } from "./admin.js";
import { adminSsoView } from "./admin-sso.js";
import { notificationsLink, notificationsView, stopNotifications } from "./notifications.js";
import { applyTheme } from "./theme.js";

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
  [/^\/teams\/([\w-]+)\/([\w-]+)\/tags$/, tagsView],
  [/^\/account$/, accountView],
  [/^\/profile$/, accountView],
  [/^\/admin$/, adminStatsView],
  [/^\/admin\/users$/, adminUsersView],
  [/^\/admin\/orgs$/, adminOrgsView],
  [/^\/admin\/platform$/, adminPlatformView],
  [/^\/admin\/sso$/, adminSsoView],
];
let me = null;

/** The signed-in user (`GET /auth/me`), asked once per sign-in and kept for the tab's next
 * loads a minute (`cachedGet`); null when it failed. */
export function whoAmI() {
  me ||= cachedGet("/auth/me").catch(() => { me = null; return null; });
  return me;
}

/** Ask `GET /auth/me` again at the next page (the user changed their own account). */
export function forgetMe() {
  me = null;
  forgetReads("/auth/me");
}

// Narrow screens fold the navigation behind "Menu" (app.css): open until a page changes,
// Escape, or a click outside it.
const bar = document.querySelector("header.bar");
const menu = document.getElementById("menu");

function foldMenu(open) {
  bar.classList.toggle("open", open);
  menu.setAttribute("aria-expanded", String(open));
}

menu.addEventListener("click", () => foldMenu(!bar.classList.contains("open")));
// The folded navigation's unread count shows on the button, so it is seen without opening.
const folded = h("span", { class: "count" });
menu.append(" ", folded);
new MutationObserver(() => fill(folded, document.querySelector("#nav .count")?.textContent || ""))
  .observe(document.getElementById("nav"), { subtree: true, childList: true, characterData: true });
document.addEventListener("click", (event) => {
  if (bar.classList.contains("open") && !bar.contains(event.target)) foldMenu(false);
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && bar.classList.contains("open")) {
    event.stopImmediatePropagation();  // this Escape is the menu's, not the page's
    foldMenu(false);
    menu.focus();
  }
});

function drawNav() {
  const nav = document.getElementById("nav");
  foldMenu(false);
  menu.hidden = !signedIn();
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
        applyTheme("system");  // the next sign-in may be someone else
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
  // Dates are shown in the user's zone and formats from the first page on, in their theme.
  const user = await whoAmI();
  setPreferences(user);
  if (user) applyTheme(user.theme);
  for (const [pattern, view] of PRIVATE) {
    const match = path.match(pattern);
    if (match) return render(view, match.slice(1));
  }
  notFound(path);
}

/** The UI's own not-found page (a mistyped address; the server answers such paths with this
 * page and status 404). */
function notFound(path) {
  document.title = "Page not found · Burnbox";
  fill(main, h("h1", {}, "Page not found"),
    h("p", {}, "There is no page at ", h("code", {}, path), ". Check the address, or go on from here:"),
    h("ul", {}, h("li", {}, h("a", { href: "/inboxes" }, "Your inboxes")),
      h("li", {}, h("a", { href: "/teams" }, "Your teams"))));
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
// A refused call waits for its window's end (js/api.js): say so calmly, keep the page.
onSlowDown((seconds) => slowNotice(seconds === null ? null : `Slowing down: retrying in ${seconds} s`));
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
