// An inbox's chaos rules (docs/mail.md "Chaos rules"): each rule with what it did (how often
// it fired, when last, spent or not), a form that adds one, and a button that clears them all.
// The API sets the whole list at once, so adding a rule sends the rules shown plus the new one
// (their counters start again at 0).

import { api } from "./api.js";
import { choice, errorBox, field, fill, form, h, notify, showError, when } from "./dom.js";

const WRITABLE = ["stage", "action", "code", "status", "text", "delay_seconds", "times", "percent"];

/** What a rule does, in one line: "RCPT: reply 451 4.7.1 Greylisted · next 2 · fired 1 time". */
export function describeRule(rule) {
  const act = rule.action === "reply" ? `reply ${rule.code} ${rule.status} ${rule.text}`
    : rule.action === "delay" ? `delay ${rule.delay_seconds} s` : "close the connection (421)";
  const trigger = rule.times != null ? `next ${rule.times}` : `${rule.percent}% of messages`;
  const fired = `fired ${rule.fired} time${rule.fired === 1 ? "" : "s"}${rule.last_fired_at ? `, last ${when(rule.last_fired_at)}` : ""}`;
  return `${rule.stage.toUpperCase()}: ${act} · ${trigger} · ${fired}${rule.spent ? " · spent" : ""}`;
}

function written(rule) {
  return Object.fromEntries(WRITABLE.filter((key) => rule[key] != null).map((key) => [key, rule[key]]));
}

const INBOX_NOTE = "Make the SMTP server fail on purpose for this inbox, to test an application's retries.";

/** The chaos rules card of the rules at API `path` (an inbox's `/inboxes/:id/chaos`, or a
 * catch-all assignment's, whose rules each inbox it creates copies), titled `title`; it loads
 * itself, unless given the answer already (`rules`, the `{rules}` of a GET). */
export function chaosPanel(path, { title = "Chaos rules", note = INBOX_NOTE, rules: given = null } = {}) {
  const box = errorBox();
  const list = h("ul", { class: "list", "aria-label": title });
  const summary = h("summary", {}, title);
  let rules = [];

  function draw(answer) {
    rules = answer.rules;
    fill(summary, rules.length ? `${title} (${rules.length})` : title);
    fill(list, rules.length ? rules.map((rule) => h("li", { class: "row" }, describeRule(rule)))
      : h("li", { class: "empty" }, "None: mail to this inbox is answered as usual."));
  }

  async function reload() {
    try {
      draw(await api("GET", path));
    } catch (error) {
      showError(box, error);
    }
  }

  const add = form({ class: "inline", "aria-label": "Add a chaos rule" }, [
    choice("Stage", "stage", [["rcpt", "RCPT (this recipient)"], ["data", "DATA (the whole message)"]]),
    choice("Action", "action", [["reply", "Reply with a code"], ["delay", "Delay the reply"], ["close", "Close the connection"]]),
    field("Code", { name: "code", type: "number", placeholder: "451" }),
    field("Text", { name: "text", placeholder: "Chaos rule" }),
    field("Delay (s)", { name: "delay_seconds", type: "number", step: "any", placeholder: "at most 60" }),
    choice("Trigger", "trigger", [["times", "For the next N messages"], ["percent", "For N % of messages"]]),
    field("N", { name: "amount", type: "number", value: "1" }),
  ], "Add rule", async (values) => {
    const rule = { stage: values.stage, action: values.action, [values.trigger]: Number(values.amount) };
    if (values.action === "reply") {
      rule.code = Number(values.code || 451);
      if (values.text) rule.text = values.text;
    }
    if (values.action === "delay") rule.delay_seconds = Number(values.delay_seconds);
    draw(await api("PUT", path, { rules: [...rules.map(written), rule] }));
    notify("Chaos rule added");
  });

  const clear = h("button", { type: "button", class: "danger", onclick: async () => {
    box.hidden = true;
    try {
      const { message } = await api("DELETE", path);
      draw({ rules: [] });
      notify(message);
    } catch (error) {
      showError(box, error);
    }
  } }, "Clear rules");

  if (given) draw(given);
  else reload();
  return h("details", { class: "card chaos" }, summary,
    h("p", { class: "note" }, note),
    box, list, add, clear);
}
