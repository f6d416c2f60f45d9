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

/** A labelled select of `[value, text]` options, `selected` chosen (else the first). */
export function choice(label, name, options, { id = `f-${name}`, selected } = {}) {
  return h("div", { class: "field" }, h("label", { for: id }, label),
    h("select", { id, name }, options.map(([value, text]) => h("option", { value, selected: value === selected }, text))));
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

/** Run `work` (async) with `box` hidden first and any error it throws shown in it. */
export async function showingErrors(box, work) {
  box.hidden = true;
  try {
    await work();
  } catch (error) {
    showError(box, error);
  }
}

function flatten(details, prefix = "") {
  if (Array.isArray(details)) return [`${prefix}${details.join(", ")}`];
  if (details && typeof details === "object") {
    return Object.entries(details).flatMap(([key, value]) => flatten(value, `${prefix}${key}: `));
  }
  return [`${prefix}${details}`];
}

/** A notice in the page's live region. It stays until the user dismisses it or leaves the
 * page (`clearNotices`, called by the router), never onto a page it does not belong to. */
export function notify(text) {
  const status = document.getElementById("status");
  delete status.dataset.slow;
  fill(status, text);
  const dismiss = document.getElementById("dismiss");
  dismiss.hidden = false;
  dismiss.onclick = clearNotices;
}

/** The API client's notice while it waits out a 429 (`text`), or its end (`null`): then it
 * goes if it is still the notice shown, and any other notice stays. */
export function slowNotice(text) {
  const status = document.getElementById("status");
  if (text) {
    notify(text);
    status.dataset.slow = "";
  } else if ("slow" in status.dataset) {
    clearNotices();
  }
}

export function clearNotices() {
  fill(document.getElementById("status"));
  document.getElementById("dismiss").hidden = true;
}

/** A secret shown once (a new API key, a webhook's signing secret): its own box on the page
 * that made it, with a copy button. It goes with that page: no other page ever shows it. */
export function secretBox(title, value, copyText) {
  return h("div", { class: "card secret", role: "alert" },
    h("p", {}, h("strong", {}, title)),
    h("code", { class: "raw-key" }, value), " ",
    h("button", { type: "button", onclick: () => copy(value) }, copyText));
}

/** A form whose submit runs `action(values)` with errors shown in its own error box; with
 * `byField`, an error whose details name only fields of the form is shown under those fields
 * instead (the first one focused, so a screen reader reads its message). */
export function form(attrs, controls, submitText, action, { byField = false } = {}) {
  const box = errorBox();
  const button = h("button", { type: "submit" }, submitText);
  const el = h("form", attrs, box, controls, button);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    box.hidden = true;
    clearFieldErrors(el);
    button.disabled = true;
    try {
      await action(Object.fromEntries(new FormData(el)), el);
    } catch (error) {
      if (!(byField && showFieldErrors(el, error))) showError(box, error);
    } finally {
      button.disabled = false;
    }
  });
  return el;
}

function clearFieldErrors(formEl) {
  for (const message of formEl.querySelectorAll(".field-error")) message.remove();
  for (const control of formEl.querySelectorAll("[aria-invalid]")) {
    control.removeAttribute("aria-invalid");
    control.removeAttribute("aria-describedby");
  }
}

/** Put each of the error's per-field messages under its control; false (nothing shown) when
 * the error names no field, or one the form does not have. */
function showFieldErrors(formEl, error) {
  const details = error.body && error.body.details;
  const entries = details && typeof details === "object" ? Object.entries(details) : [];
  const controls = entries.map(([name]) => formEl.elements.namedItem(name));
  if (!entries.length || controls.some((control) => !control || !control.id)) return false;
  entries.forEach(([, messages], index) => {
    const control = controls[index];
    const message = h("p", { class: "error field-error", id: `${control.id}-error` },
      [messages].flat().join(", "));
    control.closest(".field").append(message);
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", message.id);
  });
  controls[0].focus();
  return true;
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

// The signed-in user's choices (`GET /auth/me`): time zone, date and time formats. Until
// they are known, UTC and the API's defaults.
const preferences = { timezone: "UTC", date_format: "YYYY-MM-DD", time_format: "24h" };

/** Use the user's time zone and formats for every date shown from now on. */
export function setPreferences(user) {
  for (const key of Object.keys(preferences)) {
    if (user && user[key]) preferences[key] = user[key];
  }
}

/** A timestamp in the user's zone and formats: `2026-11-28 01:15:31`, `28/11/2026 1:15:31 AM`. */
export function when(iso) {
  let parts;
  try {
    parts = dateParts(iso, preferences.timezone);
  } catch {
    parts = dateParts(iso, "UTC");  // a zone this browser does not know
  }
  const date = preferences.date_format.replace("YYYY", parts.year).replace("MM", parts.month)
    .replace("DD", parts.day);
  if (preferences.time_format === "12h") {
    const hour = Number(parts.hour) % 12 || 12;
    return `${date} ${hour}:${parts.minute}:${parts.second} ${Number(parts.hour) < 12 ? "AM" : "PM"}`;
  }
  return `${date} ${parts.hour}:${parts.minute}:${parts.second}`;
}

function dateParts(iso, timeZone) {
  const format = new Intl.DateTimeFormat("en-GB", { timeZone, year: "numeric", month: "2-digit",
    day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
  return Object.fromEntries(format.formatToParts(new Date(iso)).map((part) => [part.type, part.value]));
}

/** A duration as people write it: the API's `48h0m0s` is `48h`, `1h30m0s` is `1h30m`. */
export function duration(text) {
  const match = typeof text === "string" && text.match(/^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/);
  if (!text || !match) return text;
  const [, hours, minutes, seconds] = match;
  const short = [[hours, "h"], [minutes, "m"], [seconds, "s"]]
    .filter(([value]) => value && Number(value) !== 0).map(([value, unit]) => `${Number(value)}${unit}`).join("");
  return short || "0s";
}

/** A size in bytes as people read it: `519 bytes`, `2.4 MiB`. */
export function bytes(value) {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let index = 0;
  while (value >= 1024 && index < units.length - 1) { value /= 1024; index += 1; }
  return `${index ? value.toFixed(1) : value} ${units[index]}`;
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
