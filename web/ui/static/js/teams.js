// My teams, and per team its API keys and webhooks (with their deliveries).

import { api, cachedGet } from "./api.js";
import { chaosPanel } from "./chaos.js";
import { releaseRulesPanel } from "./release.js";
import { choice, errorBox, field, fill, form, h, notify, secretBox, showError, when } from "./dom.js";

// The scopes of a key are the team permissions (`GET /roles`), grouped by what they reach, in
// this order; a new key starts with what a test client needs to read mail.
const GROUPS = [["inboxes", "Inboxes"], ["emails", "E-mails"], ["domains", "Domains"],
  ["webhooks", "Webhooks"], ["apikeys", "API keys"], ["members", "Members"], ["analytics", "Analytics"],
  ["settings", "Team settings"], ["", "Team"]];
const DEFAULT_SCOPES = new Set(["team.inboxes.view", "team.inboxes.create", "team.emails.view"]);
const EVENTS = { "email.received": "An e-mail arrives", "inbox.created": "An inbox is created",
  "inbox.expired": "An inbox expires" };

/** The scope checkboxes: one fieldset per group, each box labelled by what it allows. */
function scopeFields(permissions) {
  const groupOf = (key) => {
    const part = key.split(".")[1];
    return GROUPS.some(([name]) => name === part) ? part : "";
  };
  return h("fieldset", { class: "scopes" }, h("legend", {}, "Scopes"),
    GROUPS.map(([name, title]) => {
      // Seeing comes before changing: the `.view` scope first in each group.
      const members = permissions.filter((permission) => groupOf(permission.key) === name)
        .sort((a, b) => Number(!a.key.endsWith(".view")) - Number(!b.key.endsWith(".view")) || a.key.localeCompare(b.key));
      return members.length > 0 && h("fieldset", { class: "scope-group" }, h("legend", {}, title),
        members.map((permission) => h("label", { class: "check" },
          h("input", { type: "checkbox", name: `scope:${permission.key}`, value: permission.key,
            checked: DEFAULT_SCOPES.has(permission.key) }),
          h("span", {}, sentence(permission.description), " ", h("code", { class: "scope-key" }, permission.key)))));
    }));
}

/** "view team inboxes" as a label: "View team inboxes". */
function sentence(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export async function teamsView(main) {
  const orgs = await cachedGet("/orgs?per_page=100");
  const sections = await Promise.all(orgs.data.map(async (org) => {
    const teams = await cachedGet(`/orgs/${org.id}/teams?per_page=100`);
    return h("section", { class: "card" }, h("h2", {}, org.name, " ",
      h("small", {}, h("a", { href: `/orgs/${org.id}` }, "Domains, members and invites"), " · ",
        h("a", { href: `/orgs/${org.id}/analytics` }, "Analytics"))),
      teams.data.length ? h("ul", { class: "list" }, teams.data.map((team) => h("li", { class: "row" },
        h("span", { class: "grow" }, team.name),
        h("a", { href: `/teams/${org.id}/${team.id}/domains` }, "Domains"),
        h("a", { href: `/teams/${org.id}/${team.id}/keys` }, "API keys"),
        h("a", { href: `/teams/${org.id}/${team.id}/webhooks` }, "Webhooks"),
        h("a", { href: `/teams/${org.id}/${team.id}/tags` }, "Tags"),
        h("a", { href: `/teams/${org.id}/${team.id}/analytics` }, "Analytics"))))
        : h("p", {}, "No team yet."));
  }));
  fill(main, h("h1", {}, "Teams"), sections.length ? sections : h("p", {}, "You are in no organisation yet."));
}

/** A team page's header: its name and a back link. */
async function teamHeading(orgId, teamId, what) {
  const team = await cachedGet(`/orgs/${orgId}/teams/${teamId}`);
  return [h("p", {}, h("a", { href: "/teams" }, "← Teams")), h("h1", {}, `${what} of ${team.name}`)];
}

/** The keys page; `issued` is a key just created or rotated, whose raw value is shown once. */
export async function keysView(main, orgId, teamId, issued = null) {
  const base = `/orgs/${orgId}/teams/${teamId}/api-keys`;
  const [heading, keys, roles] = await Promise.all([teamHeading(orgId, teamId, "API keys"),
    api("GET", `${base}?per_page=100`), cachedGet("/roles")]);
  const box = errorBox();
  const reload = (key = null) => keysView(main, orgId, teamId, key);
  // The raw key is in the create/rotate answer only; it is never shown again.
  const raw = issued && secretBox("Copy this key now: it will not be shown again.", issued.raw_key, "Copy key");

  async function act(method, path, body, after) {
    try {
      await after(await api(method, path, body));
    } catch (error) {
      showError(box, error);
    }
  }

  const create = form({ class: "card keyform", "aria-label": "New API key" }, [
    field("Name", { name: "name", required: true }),
    scopeFields(roles.team_permissions),
    field("Expires in (optional)", { name: "expires_in", placeholder: "e.g. 720h for 30 days" }),
  ], "Create key", async (values) => {
    const scopes = Object.keys(values).filter((k) => k.startsWith("scope:")).map((k) => values[k]);
    const key = await api("POST", base, { name: values.name, scopes, expires_in: values.expires_in || null });
    await reload(key);
  });
  const rows = keys.data.map((key) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("strong", {}, key.name), ` ${key.prefix}… `,
      h("small", {}, `${key.is_active ? "active" : "disabled"} · ${key.scopes.join(", ")}`)),
    h("button", { type: "button", onclick: () => act("PATCH", `${base}/${key.id}`, { is_active: !key.is_active },
      () => reload()) }, key.is_active ? "Disable" : "Enable"),
    h("button", { type: "button", onclick: () => act("POST", `${base}/${key.id}/rotate`, {},
      (next) => reload(next)) }, "Rotate"),
    h("button", { type: "button", class: "danger", onclick: () => confirm(`Revoke ${key.name}?`)
      && act("DELETE", `${base}/${key.id}`, undefined, () => { notify("Key revoked"); return reload(); }) }, "Revoke")));
  fill(main, heading, box, raw, create,
    rows.length ? h("ul", { class: "list", "aria-label": "API keys" }, rows) : h("p", {}, "No key yet."));
}

/** The webhooks page; `created` is a webhook just made, whose signing secret is shown once,
 * on this page only. */
export async function webhooksView(main, orgId, teamId, created = null) {
  const base = `/orgs/${orgId}/teams/${teamId}/webhooks`;
  const [heading, hooks] = await Promise.all([teamHeading(orgId, teamId, "Webhooks"), api("GET", `${base}?per_page=100`)]);
  const box = errorBox();
  const create = form({ class: "card", "aria-label": "New webhook" }, [
    field("URL", { name: "url", type: "url", required: true, placeholder: "https://hooks.example.com/burnbox" }),
    h("fieldset", {}, h("legend", {}, "Events"), Object.entries(EVENTS).map(([event, words]) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", name: `event:${event}`, value: event, checked: event === "email.received" }),
        h("span", {}, words, " ", h("code", { class: "scope-key" }, event))))),
  ], "Create webhook", async (values) => {
    const events = Object.keys(values).filter((k) => k.startsWith("event:")).map((k) => values[k]);
    const hook = await api("POST", base, { url: values.url, events });
    await webhooksView(main, orgId, teamId, hook);
  });
  const secret = created && secretBox(`Webhook created. Copy its signing secret now: it will not be shown again.`,
    created.secret, "Copy secret");
  const rows = hooks.data.map((hook) => {
    const details = h("div", { class: "deliveries" });
    return h("li", { class: "stack" },
      h("div", { class: "row" }, h("span", { class: "grow" }, h("strong", {}, hook.url), " ",
        h("small", {}, `${hook.events.join(", ")} · ${hook.is_active ? "active" : "paused"} · ${hook.failure_count} failures`)),
      h("button", { type: "button", "aria-expanded": "false", onclick: async (event) => {
        event.target.setAttribute("aria-expanded", "true");
        try {
          fill(details, await deliveries(`${base}/${hook.id}`));
        } catch (error) {
          showError(box, error);
        }
      } }, "Deliveries"),
      h("button", { type: "button", class: "danger", onclick: () => confirm(`Delete the webhook to ${hook.url}?`)
        && api("DELETE", `${base}/${hook.id}`).then(() => webhooksView(main, orgId, teamId), (error) => showError(box, error)) }, "Delete")),
      details);
  });
  fill(main, heading, box, secret, create,
    rows.length ? h("ul", { class: "list", "aria-label": "Webhooks" }, rows) : h("p", {}, "No webhook yet."));
}

async function deliveries(path) {
  const [log, stats] = await Promise.all([api("GET", `${path}/deliveries?per_page=50`), api("GET", `${path}/stats`)]);
  const figures = [`${stats.total_deliveries} deliveries`, `${stats.success_count} succeeded`,
    `${stats.failure_count} failed`, stats.total_deliveries ? `${stats.success_rate}% delivered` : null,
    stats.avg_response_time_ms === null ? null : `${Math.round(stats.avg_response_time_ms)} ms on average`,
    stats.last_delivery_at ? `last ${when(stats.last_delivery_at)}` : null].filter(Boolean).join(" · ");
  return [h("p", { class: "note" }, figures),
    log.data.length ? h("table", { class: "log" },
      h("thead", {}, h("tr", {}, ["When", "Event", "Attempt", "Result", "Time"].map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, log.data.map((entry) => h("tr", { class: entry.success ? "ok" : "failed" },
        h("td", {}, when(entry.created_at)), h("td", {}, entry.event), h("td", {}, entry.attempt),
        h("td", {}, entry.success ? `OK ${entry.response_status}` : (entry.error || `HTTP ${entry.response_status}`)),
        h("td", {}, entry.response_time_ms === null ? "" : `${entry.response_time_ms} ms`)))))
      : h("p", {}, "No delivery yet.")];
}

/** The domains assigned to a team, and assigning one of the org's domains to it. */
export async function teamDomainsView(main, orgId, teamId) {
  const base = `/orgs/${orgId}/teams/${teamId}/domains`;
  const [heading, assigned, domains] = await Promise.all([teamHeading(orgId, teamId, "Domains"),
    api("GET", `${base}?per_page=100`), api("GET", `/orgs/${orgId}/domains?per_page=100`)]);
  const box = errorBox();
  const reload = () => teamDomainsView(main, orgId, teamId);
  const assign = form({ class: "card inline", "aria-label": "Assign a domain" }, [
    choice("Domain", "domain_id", domains.data.map((domain) => [domain.id, domain.domain_name])),
    choice("Access", "access_level", [["full", "Full"], ["create_inbox", "Create inboxes"], ["read_only", "Read only"]]),
  ], "Assign", (values) => api("POST", base, values).then(reload));
  const rows = assigned.data.map((assignment) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("strong", {}, assignment.domain_name), " ",
      h("small", {}, { full: "full access", create_inbox: "create inboxes", read_only: "read only" }[assignment.access_level] || assignment.access_level),
      assignment.catch_all ? h("small", { class: "badge", title: "mail to any valid address creates its inbox" }, "catch-all") : ""),
    // Catch-all (docs/mail.md): one per domain, never on a read-only assignment (the API says why).
    h("button", { type: "button", "aria-pressed": String(assignment.catch_all),
      title: "Mail to any valid address of this domain creates its inbox in this team",
      onclick: () => api("PATCH", `${base}/${assignment.domain_id}`, { catch_all: !assignment.catch_all })
        .then(reload, (error) => showError(box, error)) },
      assignment.catch_all ? "Turn catch-all off" : "Make catch-all"),
    h("button", { type: "button", class: "danger", onclick: () => api("DELETE", `${base}/${assignment.domain_id}`)
      .then(reload, (error) => showError(box, error)) }, "Unassign")));
  // A catch-all assignment's chaos rules are copied to each inbox it creates (docs/mail.md).
  const templates = assigned.data.filter((assignment) => assignment.catch_all).map((assignment) =>
    chaosPanel(`${base}/${assignment.domain_id}/chaos`, {
      title: `Chaos rules for new inboxes at ${assignment.domain_name}`,
      note: "Each inbox this catch-all creates starts with a copy of these rules (the first message, which creates it, is answered as usual).",
    }));
  // An assignment's auto-release rules cover every inbox made through it (docs/mail.md).
  const releasing = assigned.data.filter((assignment) => assignment.catch_all).map((assignment) =>
    releaseRulesPanel(`${base}/${assignment.domain_id}/release-rules`, {
      title: `Auto-release rules for inboxes at ${assignment.domain_name}`,
      note: "Mail of every inbox this catch-all creates that matches a search is sent on to real mailboxes by itself, within the recipients allowed.",
      idPrefix: `rule-${assignment.domain_id}`,
    }));
  fill(main, heading, box, assign,
    rows.length ? h("ul", { class: "list", "aria-label": "Assigned domains" }, rows) : h("p", {}, "No domain assigned."),
    ...templates, ...releasing);
}
