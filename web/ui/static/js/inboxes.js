// The inboxes of my teams, and one inbox's e-mails arriving live over its WebSocket stream.

import { api } from "./api.js";
import { follow } from "./live.js";
import { choice, copy, errorBox, field, fill, form, h, notify, showError, timeLeft, when } from "./dom.js";
import { go, onLeave } from "./app.js";

const PER_PAGE = 50;

export async function inboxesView(main) {
  const [inboxes, domains] = await Promise.all([
    api("GET", "/inboxes?per_page=100"), api("GET", "/my/domains?per_page=100")]);
  const create = domains.data.length
    ? form({ class: "card inline", "aria-label": "New inbox" }, [
      field("Alias (optional)", { name: "alias", placeholder: "random" }),
      choice("Domain", "domain_assignment_id",
        domains.data.map((d) => [d.id, `@${d.domain_name} (${d.team_name})`])),
      field("Lifetime", { name: "ttl", placeholder: "default, e.g. 1h or 24h" }),
    ], "Create inbox", async (values) => {
      const body = { domain_assignment_id: values.domain_assignment_id };
      if (values.alias) body.alias = values.alias;
      if (values.ttl) body.ttl = values.ttl;
      const inbox = await api("POST", "/inboxes", body);
      notify(`Created ${inbox.full_address}`);
      go(`/inboxes/${inbox.id}`);
    })
    : h("p", { class: "card" }, "None of your teams has a domain to create inboxes on yet.");
  const rows = inboxes.data.map((inbox) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("a", { href: `/inboxes/${inbox.id}` }, inbox.full_address), h("br"),
      h("small", {}, `${inbox.unread_count} unread of ${inbox.email_count} · ${timeLeft(inbox.expires_at)}`)),
    h("button", { type: "button", onclick: () => copy(inbox.full_address),
      "aria-label": `Copy ${inbox.full_address}` }, "Copy")));
  fill(main, h("h1", {}, "Inboxes"), create,
    rows.length ? h("ul", { class: "list", "aria-label": "Inboxes" }, rows)
      : h("p", {}, "No active inbox yet."));
}

export async function inboxView(main, inboxId) {
  const inbox = await api("GET", `/inboxes/${inboxId}`);
  const box = errorBox();
  const left = h("span", {}, timeLeft(inbox.expires_at));
  const list = h("ul", { class: "list emails", "aria-label": "E-mails", "aria-live": "polite" });
  const pager = h("div", { class: "pager" });
  const search = h("input", { id: "f-q", name: "q", type: "search", placeholder: "from:shop has:attachment" });
  let page = 1;
  let query = "";
  let shown = { page: 1, total_pages: 0, total: 0 };

  function drawPager() {
    const pages = Math.max(shown.total_pages, 1);
    fill(pager,
      h("button", { type: "button", disabled: page <= 1, onclick: () => { page -= 1; load(); } }, "Newer"),
      ` Page ${shown.page} of ${pages} · ${shown.total} e-mail${shown.total === 1 ? "" : "s"} `,
      h("button", { type: "button", disabled: page >= pages, onclick: () => { page += 1; load(); } }, "Older"));
  }

  // The list read in flight: a live message waits for it, so the list read cannot draw over
  // mail announced meanwhile.
  let loading = null;

  function load() {
    loading = read();
    return loading;
  }

  async function read() {
    const params = new URLSearchParams({ page, per_page: PER_PAGE });
    if (query) params.set("q", query);
    try {
      const answer = await api("GET", `/inboxes/${inboxId}/emails?${params}`);
      fill(list, answer.data.map(emailRow));
      if (!answer.data.length) fill(list, h("li", { class: "empty" }, query ? "No e-mail matches." : "Waiting for e-mail…"));
      shown = answer;
      drawPager();
      box.hidden = true;
    } catch (error) {
      showError(box, error);
    }
  }

  async function act(method, path, body, after) {
    try {
      after(await api(method, path, body));
    } catch (error) {
      showError(box, error);
    }
  }

  fill(main, h("h1", {}, inbox.full_address),
    h("div", { class: "toolbar" },
      h("button", { type: "button", onclick: () => copy(inbox.full_address) }, "Copy address"), left,
      h("button", { type: "button", onclick: () => act("POST", `/inboxes/${inboxId}/extend`, {},
        (next) => { inbox.expires_at = next.expires_at; fill(left, timeLeft(next.expires_at)); notify("Inbox extended"); }) }, "Extend"),
      h("button", { type: "button", onclick: () => act("POST", `/inboxes/${inboxId}/emails/mark-all-read`, undefined,
        (answer) => { notify(`${answer.marked} marked read`); load(); }) }, "Mark all read"),
      h("button", { type: "button", class: "danger", onclick: () => confirm(`Delete ${inbox.full_address} and its e-mails?`)
        && act("DELETE", `/inboxes/${inboxId}`, undefined, () => go("/inboxes")) }, "Delete")),
    box,
    h("form", { role: "search", class: "searchbar", onsubmit: (event) => {
      event.preventDefault(); query = search.value.trim(); page = 1; load();
    } }, h("label", { for: "f-q" }, "Search"), search, h("button", { type: "submit" }, "Search")),
    list, pager);

  function countOneMore() {
    shown = { ...shown, total: shown.total + 1, total_pages: Math.ceil((shown.total + 1) / PER_PAGE) };
    drawPager();
  }

  // A burst of replayed e-mails (after a reconnect) reads the list once, not once each; not
  // at all once the user has left the page.
  let reread = null;
  let gone = false;
  const rereadSoon = () => { clearTimeout(reread); if (!gone) reread = setTimeout(load, 300); };
  onLeave(() => { gone = true; clearTimeout(reread); });
  // Mail stored while the page opens is in the first read, on the socket, or in the read made
  // once the socket first opens (the server listens from then on); an e-mail already listed
  // is not added again.
  let opened = false;
  const firstOpen = () => { if (!opened) rereadSoon(); opened = true; };
  onLeave(follow(`/ws/inboxes/${inboxId}`, async (message) => {
    if (message.type === "replay.incomplete") return rereadSoon();
    if (message.type !== "email.received") return;
    await loading;
    const email = message.data;
    if (list.querySelector(`[data-id="${email.id}"]`)) return;
    notify(`New e-mail: ${email.subject || "(no subject)"}`);
    if (query) return;  // a search shows only a notice
    // One older than the newest listed is one replayed after a reconnect, which the last read
    // may already have counted: read again. A new one goes on top of the first page, and
    // only counts on the others.
    const newest = list.querySelector("[data-received-at]");
    if (newest && Date.parse(email.received_at) < Date.parse(newest.dataset.receivedAt)) {
      return rereadSoon();
    }
    if (page > 1) return countOneMore();
    list.querySelector(".empty")?.remove();
    list.prepend(emailRow(email));
    while (list.children.length > PER_PAGE) list.lastChild.remove();
    countOneMore();
  }, firstOpen));
  await load();
  const ticker = setInterval(() => fill(left, timeLeft(inbox.expires_at)), 30000);
  onLeave(() => clearInterval(ticker));
}

function emailRow(email) {
  return h("li", { class: email.is_read ? "row" : "row unread",
    dataset: { id: email.id, receivedAt: email.received_at } },
    h("a", { href: `/emails/${email.id}`, class: "grow" },
      h("span", { class: "from" }, email.from_address),
      h("span", { class: "subject" }, email.subject || "(no subject)",
        email.has_attachments ? h("span", { class: "badge" }, "attachment") : null),
      h("small", { class: "snippet" }, email.snippet)),
    h("time", { datetime: email.received_at }, when(email.received_at)),
    email.is_read ? null : h("span", { class: "sr-only" }, "unread"));
}
