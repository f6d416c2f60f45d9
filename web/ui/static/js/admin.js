// The system administrator's pages (docs/admin.md, docs/admin-platform.md): the platform's
// figures kept live over /ws/admin-stats, users, orgs and the platform settings. The
// navigation links here only for a system administrator; the API refuses everyone else (403),
// and that envelope is what a non-administrator who types the address sees.

import { api } from "./api.js";
import { follow } from "./live.js";
import { bytes, duration, errorBox, field, fill, form, h, notify, showError, when } from "./dom.js";
import { go, onLeave } from "./app.js";

const FIGURES = [
  ["total_emails", "E-mails received"], ["active_inboxes", "Active inboxes"],
  ["total_inboxes", "Inboxes stored"], ["total_users", "Users"], ["total_sessions", "Active sessions"],
  ["total_domains", "Domains"], ["total_teams", "Teams"], ["total_webhooks", "Webhooks"],
  ["total_api_keys", "API keys"], ["storage_used_bytes", "Storage used"],
];
const PER_PAGE = 50;

/** The admin pages' shared header: the section links, the current one marked. */
export function adminHeading(title, current) {
  const links = [["/admin", "Platform"], ["/admin/users", "Users"], ["/admin/orgs", "Orgs"],
    ["/admin/platform", "Settings"], ["/admin/sso", "Single sign-on"]];
  return [h("nav", { class: "subnav", "aria-label": "Administration" }, links.map(([href, text]) =>
    h("a", { href, "aria-current": href === current ? "page" : false }, text))), h("h1", {}, title)];
}

/** The figures as a definition list, redrawn in place by each snapshot of the stream. */
export async function adminStatsView(main) {
  const figures = h("dl", { class: "figures", "aria-live": "polite" });
  const updated = h("p", { class: "note" });
  const draw = (stats) => {
    fill(figures, FIGURES.map(([key, label]) => h("div", { class: "figure" }, h("dt", {}, label),
      h("dd", { "data-figure": key }, key === "storage_used_bytes" ? bytes(stats[key]) : stats[key].toLocaleString()))));
    // In the user's zone and formats (`when`), as every other time of the UI: the browser's
    // own locale showed 12-hour times to users who chose the 24-hour clock.
    fill(updated, `Updated ${when(new Date().toISOString())} · live`);
  };
  draw(await api("GET", "/admin/stats"));
  fill(main, adminHeading("Platform", "/admin"), figures, updated);
  onLeave(follow("/ws/admin-stats", (message) => message.type === "admin.stats" && draw(message.data)));
}

/** Previous / next links of a list page, keeping the query. */
function pager(path, query, page) {
  const link = (to, text) => {
    const params = new URLSearchParams({ ...(query ? { q: query } : {}), page: String(to) });
    return h("a", { href: `${path}?${params}` }, text);
  };
  return h("p", { class: "row" }, page.page > 1 && link(page.page - 1, "← Previous"),
    h("span", { class: "note" }, `Page ${page.page} of ${Math.max(page.total_pages, 1)} · ${page.total} in all`),
    page.page < page.total_pages && link(page.page + 1, "Next →"));
}

/** The search form of a list page: it navigates, so the search is in the address. */
function searchForm(path, what, query) {
  return form({ class: "card row", role: "search", "aria-label": `Find ${what}` },
    [field(`Search ${what}`, { name: "q", type: "search", value: query, maxlength: 200 })], "Search",
    async (values) => go(values.q ? `${path}?${new URLSearchParams({ q: values.q })}` : path));
}

function listQuery() {
  const params = new URLSearchParams(location.search);
  return { q: params.get("q") || "", page: Math.max(Number(params.get("page")) || 1, 1) };
}

export async function adminUsersView(main) {
  const { q, page } = listQuery();
  const params = new URLSearchParams({ page: String(page), per_page: String(PER_PAGE), ...(q ? { q } : {}) });
  const users = await api("GET", `/admin/users?${params}`);
  const box = errorBox();
  const reload = () => adminUsersView(main);

  async function act(method, path, body, done) {
    box.hidden = true;
    try {
      notify(done(await api(method, path, body)));
      await reload();
    } catch (error) {
      showError(box, error);
    }
  }

  const rows = users.data.map((user) => h("li", { class: "row", dataset: { user: user.email } },
    h("span", { class: "grow" }, h("strong", {}, user.email), ` ${user.display_name} `,
      user.is_system_admin && h("span", { class: "badge" }, "admin"),
      user.disabled && h("span", { class: "badge warn" }, "disabled"),
      h("small", { class: "note" }, ` · ${user.auth_method} · since ${when(user.created_at)}`)),
    h("button", { type: "button", "aria-label": `${user.disabled ? "Enable" : "Disable"} ${user.email}`,
      onclick: () => act("PATCH", `/admin/users/${user.id}`, { disabled: !user.disabled },
        () => `${user.email} ${user.disabled ? "enabled" : "disabled"}`) }, user.disabled ? "Enable" : "Disable"),
    h("button", { type: "button", "aria-label": `End sessions of ${user.email}`,
      onclick: () => act("DELETE", `/admin/users/${user.id}/sessions`, undefined,
        (answer) => `${answer.revoked} session(s) of ${user.email} ended`) }, "End sessions"),
    h("button", { type: "button", class: "danger", "aria-label": `Delete ${user.email}`,
      onclick: () => confirm(`Delete ${user.email}? Their keys are revoked and their sessions end; this cannot be undone.`)
        && act("DELETE", `/admin/users/${user.id}`, undefined, () => `${user.email} deleted`) }, "Delete")));
  fill(main, adminHeading("Users", "/admin/users"), searchForm("/admin/users", "users", q), box,
    rows.length ? h("ul", { class: "list", "aria-label": "Users" }, rows) : h("p", {}, "No user matches."),
    pager("/admin/users", q, users));
}

export async function adminOrgsView(main) {
  const { q, page } = listQuery();
  const params = new URLSearchParams({ page: String(page), per_page: String(PER_PAGE), ...(q ? { q } : {}) });
  const orgs = await api("GET", `/admin/orgs?${params}`);
  const rows = orgs.data.map((org) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("strong", {}, org.name), ` ${org.slug}`),
    h("small", { class: "note" }, `${org.member_count} members · ${org.team_count} teams · ${org.domain_count} domains`)));
  fill(main, adminHeading("Orgs", "/admin/orgs"), searchForm("/admin/orgs", "orgs", q),
    rows.length ? h("ul", { class: "list", "aria-label": "Orgs" }, rows) : h("p", {}, "No org matches."),
    pager("/admin/orgs", q, orgs));
}

const META = new Set(["overridden", "revision", "updated_at"]);

// What a 0 means for the keys where it is not a number of things (docs/admin.md): said beside
// the control whenever it holds 0, so "0 domains per org" never reads as "none allowed".
const AT_ZERO = {
  max_domains: "No limit", max_teams: "No limit", max_inboxes_per_domain: "No limit",
  max_sessions_per_user: "No limit", lockout_max_attempts: "Lock-out off",
  max_attachment_size_mb: "No attachment kept",
};

// Each platform key in words, with a line of help; `choices` makes a list of options. A key
// the API adds later still shows, under its own name, until it gets a line here.
const SETTINGS = {
  allow_registration: ["Anyone can register", "Let people create an account on the sign-in page."],
  require_email_verification: ["Require e-mail verification", "New accounts confirm their address before signing in."],
  email_verification_ttl: ["Verification link lifetime", "How long the link in the verification e-mail works, e.g. 24h."],
  password_min_length: ["Minimum password length", "In characters, 6 to 128."],
  password_require_upper: ["Passwords need an upper-case letter", ""],
  password_require_lower: ["Passwords need a lower-case letter", ""],
  password_require_number: ["Passwords need a digit", ""],
  password_require_special: ["Passwords need a symbol", ""],
  lockout_max_attempts: ["Failed sign-ins before lock-out", "0 turns the lock-out off."],
  lockout_duration: ["Lock-out duration", "How long an account stays locked, e.g. 15m."],
  default_inbox_ttl: ["Default inbox lifetime", "When an inbox is created without one, e.g. 10m or 1h30m."],
  max_inbox_ttl: ["Longest inbox lifetime", "No inbox lives longer, extensions included, e.g. 24h."],
  max_domains: ["Domains per org", "The most domains one org may add; 0 means no limit."],
  max_teams: ["Teams per org", "The most teams one org may have; 0 means no limit."],
  max_inboxes_per_domain: ["Inboxes per domain", "The most active inboxes on one domain; 0 means no limit."],
  max_sessions_per_user: ["Sessions per user", "Devices signed in at once; 0 means no limit."],
  webhook_max_retries: ["Webhook delivery attempts", "How many times a failed delivery is tried, 1 to 10."],
  webhook_timeout: ["Webhook time-out", "How long a delivery waits for the receiver, e.g. 10s."],
  attachments_enabled: ["Keep attachments", "When off, e-mails are stored without their attachments."],
  max_attachment_size_mb: ["Maximum attachment size (MB)", "Larger attachments are dropped; the e-mail is kept. 0 keeps none."],
  timezone: ["Default time zone", "For users who have not chosen one, e.g. Europe/Berlin."],
  date_format: ["Default date format", "For users who have not chosen one.",
    ["YYYY-MM-DD", "DD/MM/YYYY", "MM/DD/YYYY", "DD.MM.YYYY"]],
  time_format: ["Default time format", "For users who have not chosen one.", ["24h", "12h"]],
  demo_enabled: ["Try-it mode", "A public page where anyone gets a throwaway inbox without an account."],
  enforce_sso: ["Single sign-on only", "Users sign in through an SSO provider, not with a password."],
  enforce_sso_for_system_admins: ["Single sign-on for administrators too", "Also require SSO of system administrators."],
};

/** What a settings control holds, of the kind the API answered for its key. */
function controlValue(control, kind) {
  if (kind === "boolean") return control.checked;
  // An empty number goes as "" so the API refuses it: NaN would be sent as null, which unpins.
  if (kind === "number") return control.value === "" ? "" : Number(control.value);
  return control.value;
}

/** The value of `key` as the form shows it: a duration as people write it (`48h`). */
function shownValue(value) {
  return typeof value === "string" ? duration(value) : value;
}

/** The platform settings: one control per key, of the kind of its value. Saving sends only the
 * keys whose value changed (each key sent is pinned, so an untouched one keeps following the
 * configuration); "Unpin" sends null for one key. Errors are the envelope's, details included. */
export async function adminPlatformView(main) {
  const current = await api("GET", "/admin/platform");
  const keys = Object.keys(current).filter((key) => !META.has(key));
  const box = errorBox();
  const reload = () => adminPlatformView(main);
  const controls = keys.map((key) => {
    const value = shownValue(current[key]);
    const [label, help, choices] = SETTINGS[key] || [key.replaceAll("_", " "), ""];
    const pinned = current.overridden.includes(key);
    const id = `f-${key}`;
    const zero = AT_ZERO[key] ? h("span", { class: "badge zero", id: `${id}-zero` }) : null;
    // Said while the control holds 0, and empty otherwise (a description that points at a
    // hidden element still reads its text).
    const showZero = (text) => {
      if (!zero) return;
      const isZero = text !== "" && Number(text) === 0;
      fill(zero, isZero ? AT_ZERO[key] : "");
      zero.hidden = !isZero;
    };
    const described = help || zero
      ? { "aria-describedby": [help && `${id}-help`, zero && `${id}-zero`].filter(Boolean).join(" ") } : {};
    let input;
    if (typeof value === "boolean") input = h("input", { id, name: key, type: "checkbox", checked: value, ...described });
    else if (choices) {
      input = h("select", { id, name: key, ...described }, choices.map((option) => h("option", { value: option }, option)));
      input.value = value;
    } else {
      input = h("input", { id, name: key, type: typeof value === "number" ? "number" : "text", value, ...described,
        oninput: (event) => showZero(event.target.value) });
      showZero(String(value));
    }
    const unpin = pinned && h("button", { type: "button", class: "link", "aria-label": `Unpin ${label}`,
      onclick: async () => {
        try {
          await api("PUT", "/admin/platform", { [key]: null });
          notify(`${label} follows the configuration again`);
          await reload();
        } catch (error) {
          showError(box, error);
        }
      } }, "Unpin");
    const helpLine = help && h("span", { class: "help", id: `${id}-help` }, help);
    if (typeof value === "boolean") {
      return h("div", { class: "field check" }, input, h("label", { for: id }, label),
        pinned && h("span", { class: "badge" }, "pinned"), unpin, helpLine);
    }
    return h("div", { class: "field" }, h("label", { for: id }, label), input, zero, helpLine,
      pinned && h("span", { class: "row" }, h("span", { class: "badge" }, "pinned"), unpin));
  });
  const settings = form({ class: "card", "aria-label": "Platform settings" }, controls, "Save settings",
    async (_, el) => {
      const changes = {};
      for (const key of keys) {
        // Compared with what the form showed (`48h` for the API's `48h0m0s`): an untouched
        // key is never sent, so it is never pinned.
        const value = controlValue(el.elements[key], typeof current[key]);
        if (value !== shownValue(current[key])) changes[key] = value;
      }
      if (!Object.keys(changes).length) return notify("Nothing changed");
      const saved = await api("PUT", "/admin/platform", changes);
      notify(`Saved: revision ${saved.revision}`);
      await reload();
    });
  fill(main, adminHeading("Platform settings", "/admin/platform"),
    h("p", { class: "note" }, `Revision ${current.revision}`, current.updated_at ? ` · changed ${when(current.updated_at)}` : "",
      ". A pinned key no longer follows the configuration file and environment."),
    box, settings);
}
