// The public try-it page (demo mode): a throwaway inbox without an account, read with the
// inbox's read token. Demo inboxes have no WebSocket stream, so the page polls every 5 s.

import { api } from "./api.js";
import { copy, fill, h, when } from "./dom.js";
import { htmlFrame } from "./email.js";
import { onLeave } from "./app.js";

const POLL_MS = 5000;

export async function tryView(main) {
  // The status answers 200 whether the mode is on or off ({"enabled": false} when off).
  const status = await api("GET", "/try/status");
  if (!status.enabled) {
    return fill(main, h("h1", {}, "Try Burnbox"), h("p", {}, "The try-it mode is off on this server."));
  }
  fill(main, h("h1", {}, "Try Burnbox"),
    h("p", {}, `Get a throwaway address on ${status.domain}, no account needed. It lives ${status.ttl}.`),
    h("button", { type: "button", onclick: () => start(main) }, "Create a throwaway inbox"));
}

async function start(main) {
  const inbox = await api("POST", "/try/inbox");
  const token = { "X-Read-Token": inbox.read_token };
  const list = h("ul", { class: "list emails", "aria-label": "E-mails", "aria-live": "polite" });
  const reader = h("div");
  async function poll() {
    const page = await api("GET", `/try/inbox/${inbox.id}/emails?per_page=50`, undefined, token);
    fill(list, page.data.length ? page.data.map((email) => h("li", { class: "row" },
      h("button", { type: "button", class: "link grow", onclick: async () => {
        const full = await api("GET", `/try/inbox/${inbox.id}/emails/${email.id}`, undefined, token);
        fill(reader, h("h2", {}, full.subject || "(no subject)"),
          full.body_html ? htmlFrame(full.body_html) : h("pre", { class: "body-text" }, full.body_text));
      } }, `${email.subject || "(no subject)"} — ${email.from_address}`),
      h("time", { datetime: email.received_at }, when(email.received_at))))
      : h("li", { class: "empty" }, "Waiting for e-mail…"));
  }
  fill(main, h("h1", {}, inbox.full_address),
    h("div", { class: "toolbar" }, h("button", { type: "button", onclick: () => copy(inbox.full_address) }, "Copy address")),
    list, reader);
  await poll();
  const timer = setInterval(() => poll().catch(() => {}), POLL_MS);
  onLeave(() => clearInterval(timer));
}
