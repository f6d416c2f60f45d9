// Release (docs/mail.md "Release"): send the e-mail on to real mailboxes through the server's
// release relay, and the results of every release of it. The server decides who may (the
// `team.emails.release` permission) and where to (the operator's, org's and team's recipient
// patterns); its refusals are shown as it words them. While a release is queued the list asks
// again every few seconds, until it is sent or failed. Auto-release rules (`releaseRulesPanel`)
// are a card of an inbox (or of a catch-all assignment) that lists its rules and takes new
// ones; it reads them only once opened, so the inbox page costs no request more.

import { api } from "./api.js";
import { errorBox, field, fill, form, h, notify, showError, showingErrors, when } from "./dom.js";

const POLL_MS = 3000;
const POLLS = 40;
const STATES = { queued: "Queued", sent: "Sent", failed: "Failed" };

/** The addresses typed in a field, separated by commas, semicolons or spaces. */
function addresses(text) {
  return text.split(/[,;\s]+/).map((part) => part.trim()).filter(Boolean);
}

/** One release as a list row: its state, recipients, attempts, the relay's reply, the times. */
function releaseRow(release) {
  return h("li", { class: `release release-${release.state}` },
    h("p", {}, h("strong", { class: `state state-${release.state}` }, STATES[release.state] || release.state),
      " to ", release.recipients.join(", "), release.rule_id ? h("small", {}, " · by an auto-release rule") : ""),
    h("p", {}, h("small", {},
      `Asked ${when(release.created_at)}`,
      release.finished_at ? ` · finished ${when(release.finished_at)}` : "",
      ` · ${release.attempts} ${release.attempts === 1 ? "attempt" : "attempts"}`)),
    h("p", {}, h("small", {}, "Relay's reply: "),
      release.relay_reply ? h("code", { class: "relay-reply" }, release.relay_reply) : h("small", {}, "none yet")));
}

/** The "Release" panel of the reading pane for `email`. */
export function releasePanel(email) {
  const box = errorBox();
  const list = h("ul", { class: "list releases", "aria-live": "polite" });
  let polls = 0;

  async function load() {
    try {
      const { releases } = await api("GET", `/emails/${email.id}/releases`);
      fill(list, releases.length ? releases.map(releaseRow) : h("li", { class: "empty" }, "Not released yet."));
      if (releases.some((release) => release.state === "queued") && polls < POLLS) {
        polls += 1;
        setTimeout(() => list.isConnected && load(), POLL_MS);
      }
    } catch (error) {
      showError(box, error);
    }
  }

  const send = form({ class: "release-form", "aria-label": "Release this e-mail" },
    h("div", { class: "field" },
      h("label", { for: "f-recipients" }, "Send to (real mailboxes, separated by commas)"),
      h("input", { id: "f-recipients", name: "recipients", type: "text", required: true,
        autocomplete: "email", placeholder: "qa@company.example" })),
    "Release", async (values, el) => {
      const recipients = addresses(values.recipients);
      await api("POST", `/emails/${email.id}/release`, { recipients });
      el.reset();
      notify(`Release queued to ${recipients.join(", ")}`);
      polls = 0;
      await load();
    });

  load();
  return h("section", { class: "release-panel" },
    h("p", {}, "Send this e-mail, exactly as received, to a real mailbox to see it in a real mail client. ",
      "Only the recipients your operator, organisation and team allow can be reached."),
    send, box, h("h3", {}, "Releases"), list);
}

const RULES_NOTE = "New mail of this inbox that matches a search is sent on to real mailboxes by itself, "
  + "within the recipients your operator, organisation and team allow. Team leads can add rules.";

/** The auto-release rules card of the rules at API `path` (an inbox's
 * `/inboxes/:id/release-rules`, or a domain assignment's), titled `title`: each rule with a
 * Delete button, and a form that adds one. Read when first opened. */
export function releaseRulesPanel(path, { title = "Auto-release rules", note = RULES_NOTE, idPrefix = "rule" } = {}) {
  const box = errorBox();
  const list = h("ul", { class: "list", "aria-label": title });
  const summary = h("summary", {}, title);

  function draw(rules) {
    fill(summary, rules.length ? `${title} (${rules.length})` : title);
    fill(list, rules.length ? rules.map((rule) => h("li", { class: "row" },
      h("span", { class: "grow" }, "Mail matching ", h("code", {}, rule.query), " goes to ", rule.recipients.join(", ")),
      h("button", { type: "button", class: "danger", "aria-label": `Delete the rule ${rule.query}`,
        onclick: () => run(async () => { notify((await api("DELETE", `${path}/${rule.id}`)).message); await reload(); }) },
      "Delete")))
      : h("li", { class: "empty" }, "None: nothing is released by itself."));
  }

  const run = (work) => showingErrors(box, work);

  const reload = () => run(async () => draw((await api("GET", path)).rules));

  const add = form({ class: "inline", "aria-label": "Add an auto-release rule" }, [
    field("Mail matching (search)", { id: `f-${idPrefix}-query`, name: "query", required: true, placeholder: "subject:invoice" }),
    field("Recipients (separated by commas)", { id: `f-${idPrefix}-recipients`, name: "recipients", required: true,
      autocomplete: "email", placeholder: "qa@company.example" }),
  ], "Add rule", async (values, el) => {
    const recipients = addresses(values.recipients);
    await api("POST", path, { query: values.query, recipients });
    el.reset();
    notify("Auto-release rule added");
    await reload();
  });

  const card = h("details", { class: "card release-rules" }, summary,
    h("p", { class: "note" }, note), box, list, add);
  card.addEventListener("toggle", () => { if (card.open && !card.dataset.loaded) { card.dataset.loaded = "1"; reload(); } });
  return card;
}
