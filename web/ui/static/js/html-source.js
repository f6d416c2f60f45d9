// The HTML source of an e-mail, highlighted: tags, attribute names, their values, comments,
// doctypes and character references each in a colour of their own (app.css, both themes);
// as the sender wrote it (`GET /emails/:id/html-source`, fetched when asked) or as Burnbox
// keeps and shows it, sanitised (the detail's `body_html`).
//
// The markup is mail, so it is never parsed by the browser as HTML: `tokens` cuts it into
// pieces with plain string scanning, and `highlighted` puts each piece in a text node (a span's
// textContent), so a `<script>` in the source is only ever shown. No library is loaded.

import { api } from "./api.js";
import { fill, h, showError } from "./dom.js";

// Highlighting costs a few elements per tag; past this many characters the rest is shown as
// one plain text node (a message's HTML is kept up to a million characters).
export const HIGHLIGHT_CHARS = 200_000;

const NAME = /[^\s/>=]/;

/** The pieces of `markup`, in order, as [kind, text] pairs whose texts join back into it
 * exactly. Kinds: "text", "tag" (`<a`, `</a`, `>`, `/>`), "attr" (a name), "punct" (`=`),
 * "value" (with its quotes), "comment", "doctype" (`<!...>`, `<?...>`), "entity" (`&amp;`).
 * Markup cut off inside a tag still yields every character, the rest of it in the tag. */
export function tokens(markup) {
  const out = [];
  let at = 0;
  const push = (kind, end) => {
    if (end > at) out.push([kind, markup.slice(at, end)]);
    at = end;
  };
  while (at < markup.length) {
    const char = markup[at];
    if (char === "&") {
      const match = /^&(#\d+|#x[\da-f]+|[a-z][\da-z]*);?/i.exec(markup.slice(at, at + 40));
      push(match ? "entity" : "text", at + (match ? match[0].length : 1));
    } else if (char !== "<") {
      let end = at;
      while (end < markup.length && markup[end] !== "<" && markup[end] !== "&") end += 1;
      push("text", end);
    } else if (markup.startsWith("<!--", at)) {
      const close = markup.indexOf("-->", at + 4);
      push("comment", close < 0 ? markup.length : close + 3);
    } else if (markup[at + 1] === "!" || markup[at + 1] === "?") {
      const close = markup.indexOf(">", at);
      push("doctype", close < 0 ? markup.length : close + 1);
    } else if (/[a-z/]/i.test(markup[at + 1] || "")) {
      tag();
    } else {
      push("text", at + 1);  // a lone "<" in text
    }
  }
  return out;

  /** A start or end tag from `<` to its `>`, with its attributes. */
  function tag() {
    let end = at + (markup[at + 1] === "/" ? 2 : 1);
    while (end < markup.length && NAME.test(markup[end])) end += 1;
    push("tag", end);
    while (at < markup.length) {
      const char = markup[at];
      if (char === ">") return push("tag", at + 1);
      if (markup.startsWith("/>", at)) return push("tag", at + 2);
      if (/\s|\//.test(char)) {
        let space = at;
        while (space < markup.length && /\s|\//.test(markup[space]) && !markup.startsWith("/>", space)) space += 1;
        push("text", space);
      } else if (char === "=") {
        push("punct", at + 1);
        value();
      } else {
        let name = at + 1;
        while (name < markup.length && NAME.test(markup[name])) name += 1;
        push("attr", name);
      }
    }
  }

  /** An attribute's value after its `=`: quoted (to the same quote) or bare (to a space or `>`). */
  function value() {
    const quote = markup[at];
    if (quote === '"' || quote === "'") {
      const close = markup.indexOf(quote, at + 1);
      return push("value", close < 0 ? markup.length : close + 1);
    }
    let end = at;
    while (end < markup.length && !/[\s>]/.test(markup[end])) end += 1;
    push("value", end);
  }
}

/** A `<pre>` showing `markup` highlighted (the first HIGHLIGHT_CHARS characters; the rest
 * plain), every piece a text node. */
export function highlighted(markup) {
  const head = markup.slice(0, HIGHLIGHT_CHARS);
  const pieces = tokens(head).map(([kind, text]) => (kind === "text" ? text : h("span", { class: `hl-${kind}` }, text)));
  const rest = markup.slice(HIGHLIGHT_CHARS);
  return h("pre", { class: "html-source", tabindex: "0", "aria-label": "HTML source of the e-mail" }, pieces, rest);
}

const VERSIONS = {
  sent: { label: "As sent", note: "The HTML as the sender wrote it, style blocks and scripts included (shown as text: nothing of it runs)." },
  sanitised: { label: "As shown", note: "The HTML as Burnbox keeps and shows it, sanitised: no scripts, event handlers, forms or remote frames." },
};

/** The source tab of `email`: a choice of the version (one pressed) above it highlighted;
 * API errors go to `box`. */
export function sourcePanel(email, box) {
  const note = h("p", { class: "note" });
  const view = h("div", {});
  let sent = null;  // the HTML as sent, once fetched
  const buttons = Object.entries(VERSIONS).map(([key, { label }]) => h("button", {
    type: "button", class: "small", dataset: { version: key }, onclick: () => show(key),
  }, label));

  async function show(key) {
    for (const button of buttons) button.setAttribute("aria-pressed", String(button.dataset.version === key));
    fill(note, VERSIONS[key].note);
    if (key === "sanitised") return fill(view, highlighted(email.body_html));
    fill(view, h("p", {}, "Loading…"));
    try {
      sent ??= (await api("GET", `/emails/${email.id}/html-source`)).html;
      if (buttons[0].getAttribute("aria-pressed") === "true") fill(view, highlighted(sent));
    } catch (error) {
      fill(view);
      showError(box, error);
    }
  }

  show("sent");
  return h("div", {}, h("div", { class: "toggle-group", role: "group", "aria-label": "Version of the HTML" }, buttons), note, view);
}
