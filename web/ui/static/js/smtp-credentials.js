// An inbox's SMTP capture credentials (docs/mail.md "Capture credentials"): the server, port,
// security and username the way an application's mail settings ask for them, and buttons that
// create, rotate or revoke them. A new secret is shown once, in its own box with a copy button
// (the API never shows it again); it goes when the panel is drawn anew.

import { api } from "./api.js";
import { errorBox, fill, h, notify, secretBox, showingErrors, when } from "./dom.js";

/** How an application's "security" setting reads for these credentials. */
function security(credentials) {
  if (credentials.starttls && credentials.auth_without_tls) return "STARTTLS (or none on this machine)";
  if (credentials.starttls) return "STARTTLS";
  return credentials.auth_without_tls ? "None"
    : "Not available: the server has no TLS certificate and does not allow logins without it (smtp.tls_cert, smtp.auth_without_tls)";
}

/** The "SMTP credentials" card of inbox `inboxId` (it loads itself, unless given the answer
 * of its GET already: `current`). */
export function smtpCredentialsPanel(inboxId, current = null) {
  const path = `/inboxes/${inboxId}/smtp-credentials`;
  const box = errorBox();
  const body = h("div", {});

  function draw(credentials, issued = null) {
    if (!credentials.active) {
      fill(body, h("p", { class: "empty" }, "None yet. Create credentials to capture an application's mail, whoever it is addressed to."),
        h("button", { type: "button", onclick: () => issue("SMTP credentials created") }, "Create credentials"));
      return;
    }
    const row = (label, value) => [h("dt", {}, label), h("dd", {}, value)];
    fill(body,
      issued && secretBox("Copy this password now: it will not be shown again.", issued, "Copy password"),
      h("dl", { class: "settings", "aria-label": "SMTP settings" },
        row("Server", credentials.host), row("Port", String(credentials.port)),
        row("Security", security(credentials)), row("Username", credentials.username),
        row("Password", issued ? "shown above, once" : "hidden (rotate for a new one)"),
        row("Last used", credentials.last_used_at ? when(credentials.last_used_at) : "never")),
      h("div", { class: "toolbar" },
        h("button", { type: "button", onclick: () => confirm("Rotate the password? The current one stops working at once.")
          && issue("SMTP password rotated") }, "Rotate"),
        h("button", { type: "button", class: "danger", onclick: () => confirm("Revoke these SMTP credentials? They stop working at once.")
          && revoke() }, "Revoke")));
  }

  const run = (work) => showingErrors(box, work);

  const issue = (done) => run(async () => {
    const { secret, ...credentials } = await api("POST", path);
    draw(credentials, secret);
    notify(done);
  });
  const revoke = () => run(async () => {
    const { message } = await api("DELETE", path);
    draw({ active: false });
    notify(message);
  });

  if (current) draw(current);
  else run(async () => draw(await api("GET", path)));
  return h("details", { class: "card smtp-credentials" }, h("summary", {}, "SMTP credentials"),
    h("p", { class: "note" }, "Point an application's outgoing mail here: everything it sends with these credentials is stored in this inbox, whoever it names, and nothing is delivered anywhere."),
    box, body);
}
