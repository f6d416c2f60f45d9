// The inboxes of my teams, and one inbox: its e-mails arriving live over its WebSocket stream,
// and from 1200 px wide the open e-mail beside the list (the reading pane). Opening an e-mail
// keeps the list, its scroll position and its selection; the address names the e-mail
// (`/inboxes/:id/emails/:emailId`), so back, forward and a shared link work. Narrower screens
// show the list or the e-mail, one at a time. Keys: j/k, Enter, Delete, / and ?.

import { api, cachedGet } from "./api.js";
import { follow } from "./live.js";
import { choice, copy, errorBox, field, fill, form, h, notify, showError, timeLeft, when } from "./dom.js";
import { go, onLeave, setTitle, stayFor, typing } from "./app.js";
import { chaosPanel } from "./chaos.js";
import { smtpCredentialsPanel } from "./smtp-credentials.js";
import { releaseRulesPanel } from "./release.js";
import { emailPane } from "./email.js";
import { listThumbnail } from "./attachment_images.js";
import { tagChips, tagQuery } from "./tags.js";
import { describeKeys } from "./keys.js";

const PER_PAGE = 50;

export async function inboxesView(main) {
  const [inboxes, domains] = await Promise.all([
    api("GET", "/inboxes?per_page=100"), cachedGet("/my/domains?per_page=100")]);
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
      go(`/inboxes/${inbox.id}`, `Created ${inbox.full_address}`);
    })
    : h("p", { class: "card" }, "None of your teams has a domain to create inboxes on yet.");
  const rows = inboxes.data.map((inbox) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("a", { href: `/inboxes/${inbox.id}` }, inbox.full_address), h("br"),
      h("small", {}, `${inbox.unread_count} unread of ${inbox.email_count} · ${timeLeft(inbox.expires_at)}`)),
    h("button", { type: "button", onclick: () => copy(inbox.full_address),
      "aria-label": `Copy ${inbox.full_address}` }, "Copy")));
  const unread = inboxes.data.reduce((sum, inbox) => sum + inbox.unread_count, 0);
  setTitle(main, unread ? `(${unread}) Inboxes` : "Inboxes");
  fill(main, h("h1", {}, "Inboxes"), create,
    rows.length ? h("ul", { class: "list", "aria-label": "Inboxes" }, rows)
      : h("p", {}, "No active inbox yet."));
}

// Reading pane beside the list from this width on (the CSS uses the same figure).
const WIDE = window.matchMedia("(min-width: 1200px)");
const KEYS = [["j", "Next e-mail"], ["k", "Previous e-mail"], ["Enter", "Open the selected e-mail"],
  ["Delete", "Delete the selected e-mail"], ["/", "Search"], ["Escape", "Back to the list (narrow screens)"]];

/** `/emails/:id` (older links, notifications): the e-mail in its inbox's page. */
export async function emailRedirect(main, emailId) {
  const email = await api("GET", `/emails/${emailId}`);
  history.replaceState(null, "", `/inboxes/${email.inbox_id}/emails/${emailId}`);
  return inboxView(main, email.inbox_id, emailId, email);
}

export async function inboxView(main, inboxId, openId = null, preloaded = null) {
  // The page's data in one call (the inbox, its first page of mail, its chaos rules and SMTP
  // credentials, where its stream stands): a load used to take five, and a reload each
  // second spent the user's rate limit.
  const overview = await api("GET", `/inboxes/${inboxId}/overview?per_page=${PER_PAGE}`);
  const inbox = overview.inbox;
  const box = errorBox();
  const left = h("span", {}, timeLeft(inbox.expires_at));
  const counts = h("span", { class: "note" });
  const list = h("ul", { class: "list emails", "aria-label": "E-mails" });
  const pager = h("div", { class: "pager" });
  const search = h("input", { id: "f-q", name: "q", type: "search", placeholder: "from:shop has:attachment",
    "aria-keyshortcuts": "/" });
  const reader = h("section", { class: "reader", "aria-label": "Open e-mail" });
  const listPane = h("section", { class: "list-pane", "aria-label": "E-mail list" });
  const layout = h("div", { class: "mailbox" }, listPane, reader);
  // The live region: new mail is announced here, not by the list (which the keys move in).
  const announce = h("p", { class: "sr-only", "aria-live": "polite" });
  let page = 1;
  let query = "";
  let shown = { page: 1, total_pages: 0, total: 0 };
  let selected = null;  // the id of the open (or, on narrow screens, last opened) e-mail
  let opening = 0;  // the latest open(): an older answer arriving late is dropped
  let listScroll = 0;

  function drawCounts() {
    fill(counts, `${inbox.unread_count} unread of ${inbox.email_count}`);
    setTitle(main, inbox.unread_count ? `(${inbox.unread_count}) ${inbox.full_address}` : inbox.full_address);
  }

  /** The inbox's counters as the API has them now (after a change of ours or new mail). */
  async function recount() {
    const fresh = await api("GET", `/inboxes/${inboxId}`);
    Object.assign(inbox, { unread_count: fresh.unread_count, email_count: fresh.email_count });
    drawCounts();
  }

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
      draw(await api("GET", `/inboxes/${inboxId}/emails?${params}`));
    } catch (error) {
      showError(box, error);
    }
  }

  /** Draw a page of the list (`answer`, the API's envelope). */
  function draw(answer) {
    // A row that had the keyboard's focus keeps it in the list read again.
    const focused = list.contains(document.activeElement) ? document.activeElement.closest("li")?.dataset.id : null;
    fill(list, answer.data.map(emailRow));
    if (focused) rowOf(focused)?.querySelector("a").focus();
    if (!answer.data.length) fill(list, h("li", { class: "empty" }, query ? "No e-mail matches." : "Waiting for e-mail…"));
    shown = answer;
    drawPager();
    markSelected();
    box.hidden = true;
  }

  async function act(method, path, body, after) {
    box.hidden = true;
    try {
      await after(await api(method, path, body));
    } catch (error) {
      showError(box, error);
    }
  }

  const rows = () => [...list.querySelectorAll("li[data-id]")];
  const rowOf = (id) => list.querySelector(`li[data-id="${id}"]`);
  const emailPath = (id) => `/inboxes/${inboxId}/emails/${id}`;

  function markSelected() {
    for (const row of rows()) {
      const on = row.dataset.id === selected;
      row.classList.toggle("selected", on);
      if (on) row.querySelector("a").setAttribute("aria-current", "true");
      else row.querySelector("a").removeAttribute("aria-current");
    }
  }

  function setRead(id, isRead) {
    const row = rowOf(id);
    if (!row) return;
    row.classList.toggle("unread", !isRead);
    row.querySelector(".sr-only.state").textContent = isRead ? "" : "unread";
  }

  /** Show the list (no e-mail open) or the e-mail `id` in the pane; on narrow screens one of
   * the two at a time, the list coming back where it was scrolled to. */
  async function open(id) {
    const ticket = ++opening;
    if (!id) {
      layout.classList.remove("reading");
      fill(reader, h("p", { class: "placeholder" }, "Select an e-mail to read it here. Press ? for the keyboard shortcuts."));
      if (!WIDE.matches) window.scrollTo(0, listScroll);
      rowOf(selected)?.querySelector("a").focus({ preventScroll: !WIDE.matches });
      return;
    }
    if (!layout.classList.contains("reading") && !WIDE.matches) listScroll = window.scrollY;
    selected = id;
    markSelected();
    layout.classList.add("reading");
    fill(reader, h("p", { class: "placeholder" }, "Loading…"));
    let email;
    try {
      email = preloaded && preloaded.id === id ? preloaded : await api("GET", `/emails/${id}`);
    } catch (error) {
      if (ticket !== opening) return;
      fill(reader, h("p", { class: "error", role: "alert" }, error.message));
      return;
    }
    preloaded = null;
    if (ticket !== opening || !main.isConnected) return;
    if (email.inbox_id !== inboxId) return go(emailPath(id).replace(inboxId, email.inbox_id));
    // Opening an e-mail reads it: shown read at once, then marked so.
    const unread = !email.is_read;
    email.is_read = true;
    fill(reader, emailPane(email, { toggleRead, remove, filterTag, tagsChanged }));
    if (!WIDE.matches) window.scrollTo(0, 0);
    if (unread) {
      setRead(id, true);
      await api("PATCH", `/emails/${id}`, { is_read: true }).then(recount, () => {});
    }
  }

  async function toggleRead(email) {
    const next = await api("PATCH", `/emails/${email.id}`, { is_read: !email.is_read });
    email.is_read = next.is_read;
    setRead(email.id, email.is_read);
    notify(email.is_read ? "Marked read" : "Marked unread");
    await recount();
  }

  /** Delete `email` and open the next one in the list (the previous one at its end). */
  async function remove(email) {
    await api("DELETE", `/emails/${email.id}`);
    const row = rowOf(email.id);
    const all = rows();
    const neighbour = all[all.indexOf(row) + 1] || all[all.indexOf(row) - 1];
    row?.remove();
    shown = { ...shown, total: Math.max(shown.total - 1, 0) };
    drawPager();
    notify("E-mail deleted");
    await recount();
    if (neighbour && WIDE.matches) return go(emailPath(neighbour.dataset.id));
    selected = neighbour ? neighbour.dataset.id : null;
    go(`/inboxes/${inboxId}`);
  }

  /** j/k: the next or previous e-mail, opened beside the list on wide screens, selected (and
   * focused) on narrow ones; the list's next page past its end. */
  function step(by) {
    const all = rows();
    if (!all.length) return;
    const at = all.findIndex((row) => row.dataset.id === selected);
    const next = all[at < 0 ? 0 : Math.min(Math.max(at + by, 0), all.length - 1)];
    if (WIDE.matches) return go(emailPath(next.dataset.id));
    selected = next.dataset.id;
    markSelected();
    next.querySelector("a").focus();
  }

  function onKey(event) {
    if (event.key === "Escape" && event.target === search) return search.blur();  // back to the keys
    if (typing(event) || !main.isConnected || document.querySelector("dialog[open]")) return;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      step(event.key === "j" ? 1 : -1);
    } else if (event.key === "/") {
      event.preventDefault();
      search.focus();
    } else if (event.key === "Enter" && selected && !event.target.closest("a, button")) {
      event.preventDefault();
      go(emailPath(selected));
    } else if (event.key === "Delete" && selected && rowOf(selected)) {
      event.preventDefault();
      act("GET", `/emails/${selected}`, undefined, remove);
    } else if (event.key === "Escape" && layout.classList.contains("reading") && !WIDE.matches) {
      go(`/inboxes/${inboxId}`);
    }
  }
  document.addEventListener("keydown", onKey);
  describeKeys(KEYS);
  onLeave(() => { document.removeEventListener("keydown", onKey); describeKeys([]); });

  // The same page follows its own e-mails' paths: the list stays as it is.
  stayFor((path) => {
    const match = path.match(/^\/inboxes\/([\w-]+)(?:\/emails\/([\w-]+))?$/);
    if (!match || match[1] !== inboxId) return false;
    open(match[2] || null);
    return true;
  });

  fill(listPane,
    h("div", { class: "toolbar" },
      h("button", { type: "button", onclick: () => copy(inbox.full_address) }, "Copy address"), left,
      h("button", { type: "button", onclick: () => act("POST", `/inboxes/${inboxId}/extend`, {},
        (next) => { inbox.expires_at = next.expires_at; fill(left, timeLeft(next.expires_at)); notify("Inbox extended"); }) }, "Extend"),
      h("button", { type: "button", onclick: () => act("POST", `/inboxes/${inboxId}/emails/mark-all-read`, undefined,
        async (answer) => { notify(`${answer.marked} marked read`); await load(); await recount(); }) }, "Mark all read"),
      h("button", { type: "button", class: "danger", onclick: () => confirm(`Delete every e-mail of ${inbox.full_address}? The inbox stays.`)
        && act("DELETE", `/inboxes/${inboxId}/emails`, undefined, async (answer) => {
          notify(`${answer.deleted} e-mail${answer.deleted === 1 ? "" : "s"} deleted`);
          selected = null;
          if (layout.classList.contains("reading")) go(`/inboxes/${inboxId}`);
          page = 1;
          await load();
          await recount();
        }) }, "Delete all e-mails"),
      h("button", { type: "button", class: "danger", onclick: () => confirm(`Delete ${inbox.full_address} and its e-mails?`)
        && act("DELETE", `/inboxes/${inboxId}`, undefined, () => go("/inboxes", `Deleted ${inbox.full_address}`)) }, "Delete inbox")),
    chaosPanel(`/inboxes/${inboxId}/chaos`, { rules: overview.chaos }),
    smtpCredentialsPanel(inboxId, overview.smtp_credentials),
    releaseRulesPanel(`/inboxes/${inboxId}/release-rules`),
    box,
    h("form", { role: "search", class: "searchbar", onsubmit: (event) => {
      event.preventDefault(); query = search.value.trim(); page = 1; load();
    } }, h("label", { for: "f-q" }, "Search"), search, h("button", { type: "submit" }, "Search")),
    list, pager);
  fill(main, h("h1", {}, inbox.full_address, " ", counts), announce, layout);
  drawCounts();
  // The wide layout needs the room: the page uses the window's width while it is shown.
  document.body.classList.add("mailbox-page");
  onLeave(() => document.body.classList.remove("mailbox-page"));

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
  // Mail stored while the page opens is in the first read or on the socket, which starts
  // where the stream stood before that read (`stream_since`) and so is sent what was
  // published since; an e-mail already listed is not added again. Without that place (the
  // stream's store did not answer), the list is read again once the socket first opens (the
  // server listens from then on).
  let opened = overview.stream_since !== null;
  const firstOpen = () => { if (!opened) rereadSoon(); opened = true; };
  onLeave(follow(`/ws/inboxes/${inboxId}`, async (message) => {
    if (message.type === "replay.incomplete") return rereadSoon();
    if (message.type !== "email.received") return;
    await loading;
    const email = message.data;
    if (rowOf(email.id)) return;
    fill(announce, `New e-mail: ${email.subject || "(no subject)"}`);
    recount().catch(() => {});
    if (query) return;  // a search shows only the announcement
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
  }, firstOpen, { since: overview.stream_since }));
  draw(overview.emails);
  open(openId);
  const ticker = setInterval(() => fill(left, timeLeft(inbox.expires_at)), 30000);
  onLeave(() => clearInterval(ticker));

  function emailRow(email) {
    return h("li", { class: email.is_read ? "row" : "row unread",
      dataset: { id: email.id, receivedAt: email.received_at } },
      h("a", { href: emailPath(email.id), class: "grow" },
        listThumbnail(email),
        h("span", { class: "from" }, email.from_address),
        h("span", { class: "subject" }, email.subject || "(no subject)",
          email.has_attachments ? h("span", { class: "badge" }, "attachment") : null),
        h("small", { class: "snippet" }, email.snippet),
        h("span", { class: "sr-only state" }, email.is_read ? "" : "unread")),
      tagChips(email.tags, filterTag),
      h("time", { datetime: email.received_at }, when(email.received_at)));
  }

  /** List only the e-mails carrying `tag` (a chip's click). */
  function filterTag(tag) {
    search.value = tagQuery(tag);
    query = search.value;
    page = 1;
    if (layout.classList.contains("reading")) go(`/inboxes/${inboxId}`);
    load();
  }

  /** The list row of `email` shows its tags as they are now. */
  function tagsChanged(email) {
    const row = rowOf(email.id);
    if (!row) return;
    row.querySelector(".tags")?.remove();
    const chips = tagChips(email.tags, filterTag);
    if (chips) row.querySelector("time").before(chips);
  }
}
