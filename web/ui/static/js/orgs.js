// One org: its domains (records to publish, verify, check history), members and invites.

import { api } from "./api.js";
import { choice, errorBox, field, fill, form, h, notify, showError, when } from "./dom.js";

// Who started a domain check, in words.
const TRIGGERS = { manual: "Verify now", auto_create: "when added", background: "background re-check" };

/** The DNS records a domain needs, as zone-file lines (docs/domains.md). */
function records(domain) {
  const name = `${domain.domain_name}.`;
  return [`${name}  3600  IN  MX   10 ${domain.mx_target}.`,
    `${name}  3600  IN  TXT  "${domain.verification_record}"`,
    `${name}  3600  IN  TXT  "v=spf1 -all"`].join("\n");
}

export async function orgView(main, orgId) {
  const base = `/orgs/${orgId}`;
  const [org, domains, members, invites] = await Promise.all([api("GET", base),
    api("GET", `${base}/domains?per_page=100`), api("GET", `${base}/members?per_page=100`),
    api("GET", `${base}/invites?per_page=100`).catch(() => null)]);
  const box = errorBox();
  const reload = () => orgView(main, orgId);

  async function act(method, path, body, done) {
    try {
      await done(await api(method, path, body));
    } catch (error) {
      showError(box, error);
    }
  }

  const domainRows = domains.data.map((domain) => {
    const history = h("div", { class: "deliveries" });
    return h("li", { class: "stack" },
      h("div", { class: "row" }, h("span", { class: "grow" }, h("strong", {}, domain.domain_name), " ",
        h("small", {}, domain.trusted ? `${domain.status.replace("_", " ")} · trusted by the operator, no DNS needed`
          : `${domain.status.replace("_", " ")} · MX ${domain.mx_verified ? "ok" : "missing"} · TXT `
          + `${domain.txt_verified ? "ok" : "missing"} · SPF ${domain.spf_verified ? "ok" : "none"}`)),
      h("button", { type: "button", onclick: () => act("POST", `${base}/domains/${domain.id}/verify`, undefined,
        (checked) => { notify(`${checked.domain_name}: ${checked.status}`); return reload(); }) }, "Verify now"),
      h("button", { type: "button", onclick: () => act("GET", `${base}/domains/${domain.id}/verification-history?per_page=20`,
        undefined, (page) => fill(history, page.data.length ? h("table", { class: "log" }, h("tbody", {},
          page.data.map((check) => h("tr", { class: check.status === "verified" ? "ok" : "failed" },
            h("td", {}, when(check.checked_at)), h("td", {}, TRIGGERS[check.trigger] || check.trigger),
            h("td", {}, check.status.replace("_", " ")),
            h("td", {}, `MX ${check.mx_verified ? "ok" : "missing"} · TXT ${check.txt_verified ? "ok" : "missing"}`
              + ` · SPF ${check.spf_verified ? "ok" : "none"}`)))))
          : h("p", {}, "No check yet."))) }, "History")),
      domain.trusted ? null : h("details", {}, h("summary", {}, "Records to publish"),
        h("pre", { class: "body-text" }, records(domain))),
      history);
  });
  const addDomain = form({ class: "card inline", "aria-label": "New domain" },
    [field("Domain name", { name: "domain_name", required: true, placeholder: "mail.example.com" })],
    "Add domain", (values) => api("POST", `${base}/domains`, values).then(reload));

  const memberRows = members.data.map((member) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("strong", {}, member.display_name), ` ${member.email}`), h("span", {}, member.role)));
  const invite = form({ class: "card inline", "aria-label": "Invite someone" }, [
    field("E-mail to invite", { name: "email", type: "email", required: true }),
    choice("Role", "role", [["member", "member"], ["admin", "admin"]]),
  ], "Send invite", (values) => api("POST", `${base}/invites`, values).then(reload));
  const inviteRows = (invites ? invites.data : []).map((pending) => h("li", { class: "row" },
    h("span", { class: "grow" }, pending.email, " ", h("small", {}, pending.role)),
    h("button", { type: "button", class: "danger", onclick: () => act("DELETE", `${base}/invites/${pending.id}`,
      undefined, reload) }, "Revoke")));

  fill(main, h("p", {}, h("a", { href: "/teams" }, "← Teams")), h("h1", {}, org.name),
    h("p", {}, h("a", { href: `${base}/analytics` }, "Analytics")), box,
    h("h2", {}, "Domains"), addDomain,
    domainRows.length ? h("ul", { class: "list", "aria-label": "Domains" }, domainRows) : h("p", {}, "No domain yet."),
    h("h2", {}, "Members"), h("ul", { class: "list", "aria-label": "Members" }, memberRows),
    invites ? [h("h2", {}, "Invites"), invite,
      inviteRows.length ? h("ul", { class: "list", "aria-label": "Invites" }, inviteRows) : h("p", {}, "No open invite.")]
      : null);
}
