// Small DOM helpers: build elements node by node (so no text is ever parsed as markup),
// show errors and notices, format times.

/** `h("button", {type: "button", onclick}, "Label")`: an element with attributes and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's content. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled input: the label's `for` names the input, so every control has a label. */
export function field(label, attrs) {
  const id = attrs.id || `f-${attrs.name}`;
  return h("div", { class: "field" }, h("label", { for: id }, label), h("input", { id, ...attrs }));
}

/** A labelled select of `[value, text]` options. */
export function choice(label, name, options) {
  const id = `f-${name}`;
  return h("div", { class: "field" }, h("label", { for: id }, label),
    h("select", { id, name }, options.map(([value, text]) => h("option", { value }, text))));
}

/** The element where a form shows its error: role=alert so screen readers announce it. */
export function errorBox() {
  return h("p", { class: "error", role: "alert", hidden: true });
}

/** Show an API error's envelope message (and its details) in `box`. */
export function showError(box, error) {
  const details = error.body && error.body.details;
  // Details often repeat the message word for word; show only what they add.
  const added = details ? flatten(details).filter((line) => !error.message.includes(line.split(": ").pop())) : [];
  fill(box, [error.message, ...added].join(" "));
  box.hidden = false;
}

function flatten(details, prefix = "") {
  if (Array.isArray(details)) return [`${prefix}${details.join(", ")}`];
  if (details && typeof details === "object") {
    return Object.entries(details).flatMap(([key, value]) => flatten(value, `${prefix}${key}: `));
  }
  return [`${prefix}${details}`];
}

/** A short notice in the page's live region. */
export function notify(text) {
  fill(document.getElementById("status"), text);
}

/** A form whose submit runs `action(values)` with errors shown in its own error box. */
export function form(attrs, controls, submitText, action) {
  const box = errorBox();
  const button = h("button", { type: "submit" }, submitText);
  const el = h("form", attrs, box, controls, button);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    box.hidden = true;
    button.disabled = true;
    try {
      await action(Object.fromEntries(new FormData(el)), el);
    } catch (error) {
      showError(box, error);
    } finally {
      button.disabled = false;
    }
  });
  return el;
}

/** "3 h 12 min left" / "expired" for an ISO timestamp. */
export function timeLeft(iso) {
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (seconds <= 0) return "expired";
  const days = Math.floor(seconds / 86400);
  const hours = Math.floor((seconds % 86400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (days) return `${days} d ${hours} h left`;
  if (hours) return `${hours} h ${minutes} min left`;
  return `${Math.max(minutes, 1)} min left`;
}

export function when(iso) {
  return new Date(iso).toLocaleString();
}

/** Copy text to the clipboard, saying so in the live region. */
export async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    notify("Copied to the clipboard");
  } catch {
    notify("Copy failed: select the text and copy it by hand");
  }
}
