// Single sign-on for system administrators (docs/sso.md): the OpenID Connect providers (add,
// edit, test, enable or disable, remove) and, per provider, the domain mappings that say which
// org and role (and team) a user of an e-mail domain joins on their first sign-in. Only the
// admin SSO API (/admin/sso/...) is used; the client secret is write-only there and never
// shown: an empty secret field keeps the stored one.

import { api } from "./api.js";
import { choice, errorBox, field, fill, form, h, notify, showError } from "./dom.js";
import { adminHeading } from "./admin.js";

const TYPES = [["oidc", "OpenID Connect (any issuer)"], ["google", "Google"], ["azure", "Microsoft Entra ID (Azure)"], ["okta", "Okta"]];

function checkbox(label, id, name, checked) {
  return h("div", { class: "field check" }, h("input", { id, name, type: "checkbox", checked }),
    h("label", { for: id }, label));
}

/** The provider fields both forms share, ids suffixed by `key`, filled from `provider`. */
function providerFields(key, provider, orgRoles) {
  return [
    field("Name (in the sign-in address)", { name: "name", id: `f-name-${key}`, required: true, placeholder: "e.g. company", pattern: "[a-z][a-z0-9_-]{1,31}", value: provider.name }),
    choice("Kind", "provider_type", TYPES, { id: `f-provider_type-${key}`, selected: provider.provider_type }),
    field("Client ID", { name: "client_id", id: `f-client_id-${key}`, required: true, value: provider.client_id }),
    field(provider.has_client_secret ? "Client secret (stored; leave empty to keep it)" : "Client secret",
      { name: "client_secret", id: `f-client_secret-${key}`, type: "password", autocomplete: "off" }),
    field("Issuer URL (not needed for Google and Azure)", { name: "issuer_url", id: `f-issuer_url-${key}`, type: "url", placeholder: "https://login.example.com", value: provider.issuer_url }),
    field("Azure tenant ID (Azure only)", { name: "tenant_id", id: `f-tenant_id-${key}`, value: provider.tenant_id }),
    field("Redirect URL (empty: derived from the public address)", { name: "redirect_url", id: `f-redirect_url-${key}`, type: "url", value: provider.redirect_url }),
    choice("Org role of a provisioned user (no mapping)", "default_org_role", orgRoles, { id: `f-default_org_role-${key}`, selected: provider.default_org_role }),
    field("Allowed e-mail domains (comma-separated, empty: any)", { name: "allowed_domains", id: `f-allowed_domains-${key}`, placeholder: "example.com, example.org", value: provider.allowed_domains.join(", ") }),
    checkbox("Create an account at the first sign-in", `f-auto_provision-${key}`, "auto_provision", provider.auto_provision),
    checkbox("Enabled (shown on the sign-in page)", `f-enabled-${key}`, "enabled", provider.enabled),
  ];
}

/** The API body of the provider fields; an empty client secret is left out (kept). */
function providerBody(values) {
  const body = { ...values, auto_provision: values.auto_provision === "on", enabled: values.enabled === "on",
    allowed_domains: values.allowed_domains.split(",").map((d) => d.trim()).filter(Boolean) };
  if (!body.client_secret) delete body.client_secret;
  return body;
}

const roleOptions = (roles) => roles.map((role) => [role.name, role.name]);

export async function adminSsoView(main) {
  const [providers, orgs, roles] = await Promise.all([api("GET", "/admin/sso/providers"),
    api("GET", "/admin/orgs?per_page=100"), api("GET", "/roles")]);
  const orgRoles = roleOptions(roles.org_roles);
  const teamRoles = roleOptions(roles.team_roles);
  const orgOptions = orgs.data.map((org) => [org.id, org.name]);
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

  const blank = { name: "", provider_type: "oidc", client_id: "", issuer_url: "", tenant_id: "", redirect_url: "",
    default_org_role: "member", allowed_domains: [], auto_provision: true, enabled: true };
  const create = form({ class: "card", "aria-label": "New provider" }, providerFields("new", blank, orgRoles),
    "Add provider", async (values) => {
      const made = await api("POST", "/admin/sso/providers", providerBody(values));
      notify(`Provider ${made.name} added`);
      await reload();
    }, { byField: true });

  /** A mapping's fields: the team select lists the teams of the org chosen. */
  function mappingFields(key, mapping) {
    const teamSelect = h("select", { id: `f-team_id-${key}`, name: "team_id" });
    const showTeams = async (orgId) => {
      let teams = [];
      try {
        teams = orgId ? (await api("GET", `/orgs/${orgId}/teams?per_page=100`)).data : [];
      } catch {
        // An org whose teams this admin cannot list: a mapping to the org alone still works.
      }
      fill(teamSelect, h("option", { value: "" }, "No team"),
        teams.map((team) => h("option", { value: team.id, selected: team.id === mapping.team_id }, team.name)));
    };
    const orgField = choice("Org", "org_id", orgOptions, { id: `f-org_id-${key}`, selected: mapping.org_id });
    const orgSelect = orgField.querySelector("select");
    orgSelect.addEventListener("change", () => showTeams(orgSelect.value));
    showTeams(orgSelect.value);
    return [
      field("E-mail domain", { name: "domain", id: `f-domain-${key}`, required: true, placeholder: "example.com", value: mapping.domain }),
      orgField,
      choice("Role in the org", "org_role", orgRoles, { id: `f-org_role-${key}`, selected: mapping.org_role }),
      h("div", { class: "field" }, h("label", { for: teamSelect.id }, "Team"), teamSelect),
      choice("Role in the team", "team_role", teamRoles, { id: `f-team_role-${key}`, selected: mapping.team_role || "member" }),
    ];
  }

  /** The API body of the mapping fields: no team clears it, and its role with it. */
  function mappingBody(values) {
    return values.team_id ? values : { ...values, team_id: null, team_role: undefined };
  }

  const rows = await Promise.all(providers.map(async (provider) => {
    const mappings = await api("GET", `/admin/sso/providers/${provider.id}/domain-mappings`);
    const result = h("p", { class: "note", "aria-live": "polite" });
    const mappingsPath = `/admin/sso/providers/${provider.id}/domain-mappings`;
    const mapForm = form({ class: "inline", "aria-label": `New domain mapping of ${provider.name}` },
      mappingFields(provider.id, { domain: "", org_id: orgOptions.length ? orgOptions[0][0] : "", org_role: "member", team_id: null }),
      "Add mapping", async (values) => {
        const body = mappingBody(values);
        if (body.team_id === null) delete body.team_id;
        await api("POST", mappingsPath, body);
        notify(`${values.domain} mapped`);
        await reload();
      }, { byField: true });
    const editProvider = form({ class: "card", "aria-label": `Settings of ${provider.name}` }, providerFields(provider.id, provider, orgRoles),
      "Save provider", async (values) => {
        const saved = await api("PUT", `/admin/sso/providers/${provider.id}`, providerBody(values));
        notify(`Provider ${saved.name} saved`);
        await reload();
      }, { byField: true });
    const editMapping = (mapping) => h("details", {}, h("summary", { "aria-label": `Edit the mapping of ${mapping.domain}` }, "Edit"),
      form({ class: "inline", "aria-label": `Mapping of ${mapping.domain}` }, mappingFields(mapping.id, mapping),
        "Save mapping", async (values) => {
          await api("PUT", `${mappingsPath}/${mapping.id}`, mappingBody(values));
          notify(`Mapping of ${values.domain} saved`);
          await reload();
        }, { byField: true }));
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
      h("details", {}, h("summary", { "aria-label": `Edit ${provider.name}` }, "Edit"), editProvider),
      h("h3", {}, "Domain mappings"),
      mappings.length ? h("ul", { class: "list", "aria-label": `Domain mappings of ${provider.name}` }, mappings.map((mapping) =>
        h("li", { class: "stack" }, h("div", { class: "row" }, h("span", { class: "grow" }, h("strong", {}, mapping.domain), ` → ${mapping.org_name || "(removed org)"} as ${mapping.org_role}`,
          mapping.team_name ? `, team ${mapping.team_name} as ${mapping.team_role}` : ""),
        h("button", { type: "button", class: "danger", "aria-label": `Remove the mapping of ${mapping.domain}`,
          onclick: () => act("DELETE", `${mappingsPath}/${mapping.id}`, undefined,
            () => `Mapping of ${mapping.domain} removed`) }, "Remove")), editMapping(mapping))))
        : h("p", { class: "note" }, "No mapping: users join no org by their domain."),
      orgs.data.length ? mapForm : null);
  }));
  fill(main, adminHeading("Single sign-on", "/admin/sso"), box,
    rows.length ? h("ul", { class: "list", "aria-label": "Providers" }, rows) : h("p", {}, "No provider yet."),
    h("h2", {}, "Add a provider"), create);
}
