// The signed-in user's notifications: the unread count in the navigation, kept live over
// /ws/notifications, and the list page.

import { api } from "./api.js";
import { errorBox, fill, h, notify, showError, when } from "./dom.js";
import { follow } from "./live.js";

const QUIET = new Set(["replay.incomplete", "email.received", "inbox.created"]);
const badge = h("span", { class: "count", "aria-label": "unread notifications" });
let stop = null;

/** The navigation link with its live unread count; the stream starts on first use. */
export function notificationsLink() {
  if (!stop) {
    refreshCount();
    stop = follow("/ws/notifications", (message) => {
      if (message.type === "pong") return;
      // Only what the user did not just see happen becomes a notice: new mail is announced
      // by its inbox's page (a notice per e-mail would pile up on every other page), and an
      // inbox the user created has its own notice already, which this one overwrote.
      if (!QUIET.has(message.type)) notify(`Notification: ${message.data.title}`);
      refreshCount();
    });
  }
  return h("a", { href: "/notifications" }, "Notifications ", badge);
}

/** Stop the stream (sign-out). */
export function stopNotifications() {
  stop?.();
  stop = null;
}

async function refreshCount() {
  try {
    const page = await api("GET", "/notifications?unread_only=true&per_page=1");
    fill(badge, page.total ? String(page.total) : "");
  } catch {
    fill(badge, "");
  }
}

export async function notificationsView(main) {
  const page = await api("GET", "/notifications?per_page=50");
  const box = errorBox();
  const reload = () => { refreshCount(); return notificationsView(main); };
  const act = (method, path) => api(method, path).then(reload, (error) => showError(box, error));
  const rows = page.data.map((item) => h("li", { class: item.is_read ? "row" : "row unread" },
    h("span", { class: "grow" }, h("strong", {}, item.title), " ", h("small", {}, when(item.created_at))),
    item.data.inbox_id ? h("a", { href: `/inboxes/${item.data.inbox_id}` }, "Open inbox") : null,
    item.is_read ? null : h("button", { type: "button", onclick: () => act("PATCH", `/notifications/${item.id}/read`) }, "Mark read")));
  fill(main, h("h1", {}, "Notifications"), box,
    h("div", { class: "toolbar" }, h("button", { type: "button", onclick: () => act("POST", "/notifications/mark-all-read") }, "Mark all read")),
    rows.length ? h("ul", { class: "list emails", "aria-label": "Notifications" }, rows) : h("p", {}, "No notification."),
    h("p", { class: "note" }, "Choose which events notify you on ", h("a", { href: "/account" }, "your account"), "."));
}
