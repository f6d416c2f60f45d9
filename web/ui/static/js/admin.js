// The system administrator's pages (docs/admin.md, docs/admin-platform.md): the platform's
// figures kept live over /ws/admin-stats, users, orgs and the platform settings. The
// navigation links here only for a system administrator; the API refuses everyone else (403),
// and that envelope is what a non-administrator who types the address sees.

import { api } from "./api.js";
import { follow } from "./live.js";
import { errorBox, field, fill, form, h, notify, showError, when } from "./dom.js";
import { go, onLeave } from "./app.js";

const FIGURES = [
  ["total_emails", "E-mails received"], ["active_inboxes", "Active inboxes"],
  ["total_inboxes", "Inboxes stored"], ["total_users", "Users"], ["total_sessions", "Active sessions"],
  ["total_domains", "Domains"], ["total_teams", "Teams"], ["total_webhooks", "Webhooks"],
  ["total_api_keys", "API keys"], ["storage_used_bytes", "Storage used"],
];
const PER_PAGE = 50;

/** The admin pages' shared header: the section links, the current one marked. */
function adminHeading(title, current) {
  const links = [["/admin", "Platform"], ["/admin/users", "Users"], ["/admin/orgs", "Orgs"],
    ["/admin/platform", "Settings"]];
  return [h("nav", { class: "subnav", "aria-label": "Administration" }, links.map(([href, text]) =>
    h("a", { href, "aria-current": href === current ? "page" : false }, text))), h("h1", {}, title)];
}

function bytes(value) {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let index = 0;
  while (value >= 1024 && index < units.length - 1) { value /= 1024; index += 1; }
  return `${index ? value.toFixed(1) : value} ${units[index]}`;
}

/** The figures as a definition list, redrawn in place by each snapshot of the stream. */
export async function adminStatsView(main) {
  const figures = h("dl", { class: "figures", "aria-live": "polite" });
  const updated = h("p", { class: "note" });
  const draw = (stats) => {
    fill(figures, FIGURES.map(([key, label]) => h("div", { class: "figure" }, h("dt", {}, label),
      h("dd", { "data-figure": key }, key === "storage_used_bytes" ? bytes(stats[key]) : stats[key].toLocaleString()))));
    fill(updated, `Updated ${new Date().toLocaleTimeString()} · live`);
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
    h("button", { type: "button", "aria-label": `End the sessions of ${user.email}`,
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

/** The value a settings control holds, of the kind the API answered for its key. */
function controlValue(control, kind) {
  if (kind === "boolean") return control.checked;
  // An empty number goes as "" so the API refuses it: NaN would be sent as null, which unpins.
  if (kind === "number") return control.value === "" ? "" : Number(control.value);
  return control.value;
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
    const value = current[key];
    const pinned = current.overridden.includes(key);
    const id = `f-${key}`;
    const input = typeof value === "boolean"
      ? h("input", { id, name: key, type: "checkbox", checked: value })
      : h("input", { id, name: key, type: typeof value === "number" ? "number" : "text", value });
    const unpin = pinned && h("button", { type: "button", class: "link", "aria-label": `Unpin ${key}`,
      onclick: async () => {
        try {
          await api("PUT", "/admin/platform", { [key]: null });
          notify(`${key} follows the configuration again`);
          await reload();
        } catch (error) {
          showError(box, error);
        }
      } }, "Unpin");
    return h("div", { class: typeof value === "boolean" ? "field check" : "field" },
      h("label", { for: id }, key.replaceAll("_", " ")), input,
      pinned && h("span", { class: "badge" }, "pinned"), unpin);
  });
  const settings = form({ class: "card", "aria-label": "Platform settings" }, controls, "Save settings",
    async (_, el) => {
      const changes = {};
      for (const key of keys) {
        const value = controlValue(el.elements[key], typeof current[key]);
        if (value !== current[key]) changes[key] = value;
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
