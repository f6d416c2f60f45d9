// The signed-in user's own account: the display name, the theme (theme.js), how dates and
// times are shown (time zone, date and time formats), which events notify them, the
// password, the linked SSO providers (link, unlink), and the sessions (every device signed in) with revoke. Everything
// goes through /auth/me, /auth/datetime-settings, /notifications/preferences, /auth/me/sso,
// /auth/sso/:provider?link=true and /auth/sessions.

import { api } from "./api.js";
import { choice, errorBox, field, fill, form, h, notify, setPreferences, showError, when } from "./dom.js";
import { sessionSummary } from "./auth.js";
import { forgetMe } from "./app.js";
import { themeChoice } from "./theme.js";

const TIME_FORMATS = { "24h": "24-hour (13:05)", "12h": "12-hour (1:05 PM)" };

// What each event that can notify means to the person choosing (the API's order).
const NOTIFYING = {
  "email.received": "New mail in an inbox I created",
  "inbox.created": "An inbox I created",
  "inbox.expired": "An inbox I created expired",
  "audit.export_ready": "An audit export I asked for is ready",
};

/** The form of which events notify the user (`PATCH /notifications/preferences`). */
function notificationsForm(chosen, reload) {
  return form({ class: "card", "aria-label": "Notifications" }, [
    h("fieldset", {}, h("legend", {}, "Notify me of"), Object.entries(NOTIFYING).map(([event, words]) =>
      h("label", { class: "check" }, h("input", { type: "checkbox", name: event, checked: chosen[event] }),
        h("span", {}, words)))),
    h("p", { class: "note" }, "New mail shows on its inbox's page as it arrives; turn it on here to count it in the navigation as well."),
  ], "Save notification settings", async (values) => {
    // An unchecked box is absent from the form's values: every event is sent, on or off.
    await api("PATCH", "/notifications/preferences",
      Object.fromEntries(Object.keys(NOTIFYING).map((event) => [event, event in values])));
    notify("Notification settings saved");
    await reload();
  });
}

/** The form of the user's time zone and date and time formats (`PATCH /auth/me`). */
function datesForm(formats, reload) {
  const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  const picked = (name, value) => (el) => { el.querySelector(`[name=${name}]`).value = value; return el; };
  const sample = "2026-11-28T13:05:09Z";
  return form({ class: "card", "aria-label": "Dates and times" }, [
    field("Time zone", { name: "timezone", value: formats.timezone, required: true, list: "zones", autocomplete: "off" }),
    h("datalist", { id: "zones" }, ["UTC", ...zones].map((zone) => h("option", { value: zone }))),
    picked("date_format", formats.date_format)(choice("Date format", "date_format",
      formats.date_formats.map((format) => [format, format]))),
    picked("time_format", formats.time_format)(choice("Time format", "time_format",
      formats.time_formats.map((format) => [format, TIME_FORMATS[format] || format]))),
    h("p", { class: "note" }, "Dates across the app are shown this way, e.g. ", when(sample), "."),
  ], "Save date and time settings", async (values) => {
    const user = await api("PATCH", "/auth/me", values);
    setPreferences(user);
    forgetMe();  // the next page asks again, with the new choices
    notify("Date and time settings saved");
    await reload();
  });
}

export async function accountView(main) {
  // Back from linking a provider (docs/sso.md): `/profile?sso_linked=<name>` or `?sso_error=`.
  const query = new URLSearchParams(location.search);
  if (location.pathname === "/profile") history.replaceState(null, "", "/account");
  const [me, sessions, identities, status, formats, notifying] = await Promise.all([
    api("GET", "/auth/me"), api("GET", "/auth/sessions?per_page=100"), api("GET", "/auth/me/sso"),
    api("GET", "/auth/sso-status"), api("GET", "/auth/datetime-settings"),
    api("GET", "/notifications/preferences")]);
  const box = errorBox();
  const reload = () => accountView(main);
  if (query.has("sso_linked")) notify(`Linked to ${query.get("sso_linked")}`);
  if (query.has("sso_error")) showError(box, { message: query.get("sso_error") });

  async function revoke(path, done) {
    box.hidden = true;
    try {
      notify(done(await api("DELETE", path)));
      await reload();
    } catch (error) {
      showError(box, error);
    }
  }

  const profile = form({ class: "card", "aria-label": "Profile" }, [
    h("p", {}, "Signed in as ", h("strong", {}, me.email)),
    field("Display name", { name: "display_name", value: me.display_name, required: true, maxlength: 200 }),
  ], "Save name", async (values) => {
    await api("PATCH", "/auth/me", { display_name: values.display_name });
    notify("Display name saved");
    await reload();
  });
  const password = form({ class: "card", "aria-label": "Change password" }, [
    field("Current password", { name: "current_password", type: "password", required: true, autocomplete: "current-password" }),
    field("New password", { name: "new_password", type: "password", required: true, autocomplete: "new-password" }),
  ], "Change password", async (values, el) => {
    await api("PUT", "/auth/me/password", values);
    el.reset();
    // The API ends every other session when the password changes.
    notify("Password changed; your other sessions were ended");
    await reload();
  });
  const linked = new Set(identities.map((identity) => identity.provider));
  const sso = h("div", { class: "card", "aria-label": "Single sign-on" },
    h("ul", { class: "list", "aria-label": "Linked providers" }, identities.map((identity) => h("li", { class: "row" },
      h("span", { class: "grow" }, h("strong", {}, identity.provider), ` · ${identity.email || identity.subject}`),
      h("button", { type: "button", "aria-label": `Unlink ${identity.provider}`,
        onclick: () => revoke(`/auth/me/sso/${identity.provider}`, () => `Unlinked ${identity.provider}`) }, "Unlink")))),
    status.providers.filter((provider) => !linked.has(provider.name)).map((provider) => h("button", {
      type: "button", onclick: async () => {
        // The link is bound to this session on the server; the provider then sends the
        // browser back to /profile.
        try {
          const { authorization_url: url } = await api("GET", `/auth/sso/${provider.name}?link=true`);
          location.assign(url);
        } catch (error) {
          showError(box, error);
        }
      } }, `Link ${provider.label}`)));
  const others = sessions.data.filter((session) => !session.is_current);
  const rows = sessions.data.map((session) => h("li", { class: "row" },
    sessionSummary(session, session.is_current && h("span", { class: "badge" }, "this device")),
    // Revoking the current session is signing out: the navigation's "Sign out" does that.
    !session.is_current && h("button", { type: "button", "aria-label": `End session of ${session.user_agent || "unknown device"} at ${session.ip_address || "unknown address"}`,
      onclick: () => revoke(`/auth/sessions/${session.id}`, () => "Session ended") }, "End session")));
  fill(main, h("h1", {}, "Account"), box, profile, themeChoice(me.theme, forgetMe), datesForm(formats, reload),
    notificationsForm(notifying, reload), password,
    (identities.length > 0 || status.providers.length > 0) && [h("h2", {}, "Single sign-on"), sso],
    h("h2", {}, "Where you are signed in"),
    h("ul", { class: "list", "aria-label": "My sessions" }, rows),
    others.length > 0 && h("p", {}, h("button", { type: "button", class: "danger",
      onclick: () => revoke("/auth/sessions", (answer) => `${answer.revoked} other session(s) ended`) },
    "End every other session")));
}
