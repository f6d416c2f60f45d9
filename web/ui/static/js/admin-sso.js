// Single sign-on for system administrators (docs/sso.md): the OpenID Connect providers (add,
// test, enable or disable, remove) and, per provider, the domain mappings that say which org
// (and role) a user of an e-mail domain joins on their first sign-in. Only the admin SSO API
// (/admin/sso/...) is used; the client secret is write-only there and never shown.

import { api } from "./api.js";
import { choice, errorBox, field, fill, form, h, notify, showError } from "./dom.js";
import { adminHeading } from "./admin.js";

const TYPES = [["oidc", "OpenID Connect (any issuer)"], ["google", "Google"], ["azure", "Microsoft Entra ID (Azure)"], ["okta", "Okta"]];
const ORG_ROLES = [["member", "Member"], ["admin", "Admin"], ["owner", "Owner"]];

export async function adminSsoView(main) {
  const [providers, orgs] = await Promise.all([api("GET", "/admin/sso/providers"),
    api("GET", "/admin/orgs?per_page=100")]);
  const box = errorBox();
  const reload = () => adminSsoView(main);

  async function act(method, path, body, done) {
    box.hidden = true;
    try {
      notify(await done(await api(method, path, body)));
      await reload();
    } catch (error) {
      showError(box, error);
    }
  }

  const create = form({ class: "card", "aria-label": "New provider" }, [
    field("Name (in the sign-in address)", { name: "name", required: true, placeholder: "e.g. company", pattern: "[a-z][a-z0-9_-]{1,31}" }),
    choice("Kind", "provider_type", TYPES),
    field("Client ID", { name: "client_id", required: true }),
    field("Client secret", { name: "client_secret", type: "password", autocomplete: "off" }),
    field("Issuer URL (not needed for Google and Azure)", { name: "issuer_url", type: "url", placeholder: "https://login.example.com" }),
    field("Azure tenant ID (Azure only)", { name: "tenant_id" }),
    field("Allowed e-mail domains (comma-separated, empty: any)", { name: "allowed_domains", placeholder: "example.com, example.org" }),
    h("div", { class: "field check" }, h("input", { id: "f-auto_provision", name: "auto_provision", type: "checkbox", checked: true }),
      h("label", { for: "f-auto_provision" }, "Create an account at the first sign-in")),
    h("div", { class: "field check" }, h("input", { id: "f-enabled", name: "enabled", type: "checkbox", checked: true }),
      h("label", { for: "f-enabled" }, "Enabled (shown on the sign-in page)")),
  ], "Add provider", async (values) => {
    const body = { name: values.name, provider_type: values.provider_type, client_id: values.client_id,
      auto_provision: values.auto_provision === "on", enabled: values.enabled === "on",
      allowed_domains: values.allowed_domains.split(",").map((d) => d.trim()).filter(Boolean) };
    for (const key of ["client_secret", "issuer_url", "tenant_id"]) if (values[key]) body[key] = values[key];
    const made = await api("POST", "/admin/sso/providers", body);
    notify(`Provider ${made.name} added`);
    await reload();
  });

  const rows = await Promise.all(providers.map(async (provider) => {
    const mappings = await api("GET", `/admin/sso/providers/${provider.id}/domain-mappings`);
    const result = h("p", { class: "note", "aria-live": "polite" });
    const mapForm = form({ class: "inline", "aria-label": `New domain mapping of ${provider.name}` }, [
      field("E-mail domain", { name: "domain", id: `f-domain-${provider.id}`, required: true, placeholder: "example.com" }),
      h("div", { class: "field" }, h("label", { for: `f-org-${provider.id}` }, "Org"),
        h("select", { id: `f-org-${provider.id}`, name: "org_id" }, orgs.data.map((org) => h("option", { value: org.id }, org.name)))),
      h("div", { class: "field" }, h("label", { for: `f-role-${provider.id}` }, "Role in the org"),
        h("select", { id: `f-role-${provider.id}`, name: "org_role" }, ORG_ROLES.map(([value, text]) => h("option", { value }, text)))),
    ], "Add mapping", async (values) => {
      await api("POST", `/admin/sso/providers/${provider.id}/domain-mappings`, values);
      notify(`${values.domain} mapped`);
      await reload();
    });
    return h("li", { class: "stack" },
      h("div", { class: "row" },
        h("span", { class: "grow" }, h("strong", {}, provider.name), " ",
          h("span", { class: provider.enabled ? "badge" : "badge warn" }, provider.enabled ? "enabled" : "disabled"),
          h("br"), h("small", { class: "note" }, `${(TYPES.find(([value]) => value === provider.provider_type) || [0, provider.provider_type])[1]}`
            + ` · client ${provider.client_id} · ${provider.has_client_secret ? "secret stored" : "no secret"}`
            + ` · ${provider.linked_user_count} linked user${provider.linked_user_count === 1 ? "" : "s"}`
            + (provider.allowed_domains.length ? ` · only ${provider.allowed_domains.join(", ")}` : ""))),
        h("button", { type: "button", "aria-label": `Test ${provider.name}`, onclick: async () => {
          fill(result, "Testing…");
          try {
            const check = await api("POST", "/admin/sso/test", { provider_id: provider.id });
            fill(result, `${check.success ? "Reachable" : "Failed"}: ${check.message} (${check.response_time} ms)`);
          } catch (error) {
            fill(result);
            showError(box, error);
          }
        } }, "Test"),
        h("button", { type: "button", "aria-label": `${provider.enabled ? "Disable" : "Enable"} ${provider.name}`,
          onclick: () => act("PUT", `/admin/sso/providers/${provider.id}`, { enabled: !provider.enabled },
            () => `${provider.name} ${provider.enabled ? "disabled" : "enabled"}`) }, provider.enabled ? "Disable" : "Enable"),
        h("button", { type: "button", class: "danger", "aria-label": `Remove ${provider.name}`,
          onclick: () => confirm(`Remove ${provider.name}? Its users can no longer sign in through it.`)
            && act("DELETE", `/admin/sso/providers/${provider.id}`, undefined, () => `${provider.name} removed`) }, "Remove")),
      result,
      h("h3", {}, "Domain mappings"),
      mappings.length ? h("ul", { class: "list", "aria-label": `Domain mappings of ${provider.name}` }, mappings.map((mapping) =>
        h("li", { class: "row" }, h("span", { class: "grow" }, h("strong", {}, mapping.domain), ` → ${mapping.org_name || "(removed org)"} as ${mapping.org_role}`,
          mapping.team_name ? `, team ${mapping.team_name} as ${mapping.team_role}` : ""),
        h("button", { type: "button", class: "danger", "aria-label": `Remove the mapping of ${mapping.domain}`,
          onclick: () => act("DELETE", `/admin/sso/providers/${provider.id}/domain-mappings/${mapping.id}`, undefined,
            () => `Mapping of ${mapping.domain} removed`) }, "Remove"))))
        : h("p", { class: "note" }, "No mapping: users join no org by their domain."),
      orgs.data.length ? mapForm : null);
  }));
  fill(main, adminHeading("Single sign-on", "/admin/sso"), box,
    rows.length ? h("ul", { class: "list", "aria-label": "Providers" }, rows) : h("p", {}, "No provider yet."),
    h("h2", {}, "Add a provider"), create);
}
