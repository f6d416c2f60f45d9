// First-run setup, sign-in and the session-limit conflict (docs/identity.md).

import { api, signIn } from "./api.js";
import { errorBox, field, fill, form, h, showError, when } from "./dom.js";
import { go } from "./app.js";

// The 409 answer of a login at the session limit, kept between the two pages of the flow.
let pending = null;

export async function setupView(main) {
  const { completed } = await api("GET", "/setup/status");
  if (completed) return go("/login");
  fill(main, h("h1", {}, "Set up Burnbox"),
    h("p", {}, "Create the first administrator and organisation."),
    form({ class: "card", "aria-label": "Setup" }, [
      field("Your e-mail", { name: "email", type: "email", required: true, autocomplete: "username" }),
      field("Your name", { name: "display_name", required: true, autocomplete: "name" }),
      field("Password", { name: "password", type: "password", required: true, autocomplete: "new-password" }),
      field("Organisation name", { name: "org", required: true }),
      field("First domain (optional)", { name: "domain", placeholder: "burnbox.test" }),
      field("First team (optional)", { name: "team" }),
    ], "Complete setup", async (values) => {
      const body = {
        admin: { email: values.email, password: values.password, display_name: values.display_name },
        org: { name: values.org },
      };
      if (values.domain) body.domain = { domain_name: values.domain };
      if (values.team) body.team = { name: values.team };
      const answer = await api("POST", "/setup/complete", body);
      // Setup answers in body mode; trade its refresh token at once for the cookie, so the
      // page keeps no refresh token.
      await signIn("/auth/refresh", { refresh_token: answer.tokens.refresh_token });
      go("/inboxes");
    }));
}

export async function loginView(main) {
  // Back from the SSO callback: `?sso_code=` to trade for tokens, or a fragment with an error
  // or a session-limit conflict (docs/sso.md). The URL is cleaned first, so a reload or the
  // back button never replays a spent code.
  const query = new URLSearchParams(location.search);
  const answer = new URLSearchParams(location.hash.slice(1));
  if (query.has("sso_code") || location.hash) history.replaceState(null, "", "/login");
  const box = errorBox();
  if (query.has("sso_code")) {
    try {
      await signIn("/auth/sso/exchange", { code: query.get("sso_code") });
      return go("/inboxes");
    } catch (error) {
      showError(box, error);
    }
  } else if (answer.get("session_conflict") === "true") {
    const token = answer.get("pending_token");
    const found = await api("GET", `/auth/login/pending-sessions?token=${encodeURIComponent(token)}`);
    pending = { ...found, pending_token: token };
    return go("/session-limit");
  } else if (answer.has("error")) {
    showError(box, { message: answer.get("error") });
  }
  const status = await api("GET", "/auth/sso-status").catch(() => ({ providers: [] }));
  // Plain links: the sign-in leaves this page for the provider and comes back to /login.
  const buttons = status.providers.map((provider) => h("a",
    { class: "button", href: provider.login_url }, `Sign in with ${provider.label}`));
  fill(main, h("h1", {}, "Sign in"), box,
    buttons.length > 0 && h("div", { class: "card narrow", "aria-label": "Single sign-on" }, ...buttons),
    form({ class: "card", "aria-label": "Sign in" }, [
      field("E-mail", { name: "email", type: "email", required: true, autocomplete: "username" }),
      field("Password", { name: "password", type: "password", required: true, autocomplete: "current-password" }),
    ], "Sign in", async (values) => {
      try {
        await signIn("/auth/login", values);
      } catch (error) {
        if (error.code !== "session_limit") throw error;
        pending = error.body;
        return go("/session-limit");
      }
      go("/inboxes");
    }));
}

/** What a session is: its device, address and when it was signed in and last used. */
export function sessionSummary(session, ...extra) {
  return h("span", { class: "grow" }, h("strong", {}, session.user_agent || "unknown device"), ...extra,
    h("br"), `${session.ip_address || "unknown address"} · signed in ${when(session.created_at)}`,
    ` · last used ${when(session.last_used_at)}`);
}

export function sessionLimitView(main, problem = null) {
  if (!pending) return go("/login");
  const box = errorBox();
  if (problem) showError(box, problem);
  const rows = pending.sessions.map((session) => h("li", { class: "row" },
    sessionSummary(session),
    h("button", { type: "button", onclick: async () => {
      try {
        await signIn("/auth/login/resolve",
          { pending_token: pending.pending_token, revoke_session_id: session.id });
        pending = null;
        go("/inboxes");
      } catch (error) {
        // Still at the limit: the answer carries a fresh pending token and the sessions now.
        if (error.code !== "session_limit") return showError(box, error);
        pending = error.body;
        sessionLimitView(main, error);
      }
    } }, "End this session")));
  fill(main, h("h1", {}, "Too many sessions"),
    h("p", {}, `You are signed in on ${pending.limit} device${pending.limit === 1 ? "" : "s"}, the most allowed. `
      + "End one of them to sign in here."),
    box, h("ul", { class: "list", "aria-label": "Active sessions" }, rows),
    h("p", {}, h("a", { href: "/login" }, "Cancel")));
}
