// One e-mail, as the inbox page's reading pane shows it: first what a tester came for (the
// sender as written, the codes and links found in it with copy buttons, the spam score and its
// reasons, the actions), then tabs for text, HTML (at a phone's, a tablet's or a desktop's
// width: frame-widths.js), the HTML source as sent or as shown (highlighted: html-source.js),
// headers, the raw source, attachments, the HTML check and the link check (those two and the
// reasons: email_checks.js).
//
// The HTML is shown in an iframe with `sandbox` (no allow-scripts, no allow-forms, no
// allow-top-navigation, no allow-same-origin: an opaque origin that can reach neither this
// page nor its token) and `srcdoc`, whose meta policy forbids every fetch but data: images.
// "Show images" rebuilds the document with http(s) images allowed, for this e-mail only.

import { api, download } from "./api.js";
import { copy, errorBox, fill, h, showError, when } from "./dom.js";
import { attachmentChecksums, htmlCheckPanel, linksPanel, spamEngine, spamReasons, unsubscribe } from "./email_checks.js";
import { widthToggle } from "./frame-widths.js";
import { sourcePanel } from "./html-source.js";
import { thumbnail, thumbnailStrip, withInlineImages } from "./attachment_images.js";
import { releasePanel } from "./release.js";
import { tagEditor } from "./tags.js";

// The same policies guard the plain page of the HTML (`/view/:id.html`, web/views/viewing.py).
const BLOCKED = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:";
const IMAGES = "default-src 'none'; style-src 'unsafe-inline'; img-src data: http: https:; font-src data:";

/** The srcdoc of an e-mail's HTML under `policy`; the meta tag comes first, before any markup
 * of the e-mail could load something. */
function frameDocument(html, policy) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy}">`;
  // target=_blank with no allow-popups in the sandbox: a click on a link opens nothing, so the
  // frame never navigates (and so never fetches) anywhere.
  return `<!doctype html><html><head>${meta}<base target="_blank"></head><body>${html}</body></html>`;
}

/** An e-mail's HTML in the sandboxed frame, remote images blocked, with the button that shows
 * them for this e-mail. */
export function htmlFrame(html) {
  const frame = h("iframe", { sandbox: "", title: "HTML body of the e-mail", class: "mail-frame",
    referrerpolicy: "no-referrer" });
  frame.srcdoc = frameDocument(html, BLOCKED);
  const note = h("p", { class: "note" }, "Remote images are blocked. ", h("button", { type: "button", onclick: () => {
    frame.srcdoc = frameDocument(html, IMAGES);
    // Shown now: the notice that they are blocked would be false.
    fill(note, "Remote images are shown for this e-mail.");
  } }, "Show remote images"));
  return h("div", {}, note, widthToggle(frame));
}

/** The From header as the sender wrote it (`Acme Shop <noreply@acme.example>`), or the
 * address alone when there is none. */
function sender(email) {
  const header = email.headers.find((one) => one.name.toLowerCase() === "from");
  return header && header.value.trim() ? header.value.trim() : email.from_address;
}

/** The codes and links found in the e-mail, each with a copy button; null when none. */
function found(email) {
  if (!email.codes.length && !email.links.length) return null;
  return h("section", { class: "found", "aria-labelledby": "found-title" },
    h("h3", { id: "found-title", class: "sr-only" }, "Codes and links"),
    email.codes.length > 0 && h("div", { class: "codes" }, h("span", { class: "label" }, email.codes.length === 1 ? "Code" : "Codes"),
      email.codes.map((code) => h("span", { class: "chip" }, h("code", {}, code),
        h("button", { type: "button", class: "small", "aria-label": `Copy code ${code}`, onclick: () => copy(code) }, "Copy")))),
    email.links.length > 0 && h("div", {}, h("span", { class: "label" }, email.links.length === 1 ? "Link" : `Links (${email.links.length})`),
      h("ul", { class: "links" }, email.links.map((link, index) => h("li", {},
        h("a", { href: link.href, target: "_blank", rel: "noopener noreferrer", title: link.href },
          link.text ? `${link.text} — ${link.href}` : link.href),
        h("button", { type: "button", class: "small", "aria-label": `Copy link ${index + 1}: ${link.href}`,
          onclick: () => copy(link.href) }, "Copy"))))));
}

function spam(score) {
  const level = score >= 5 ? "high" : score >= 2 ? "some" : "low";
  return h("span", { class: `spam ${level}` }, `Spam score ${Number(score).toFixed(1)} of 10`);
}

// SPF, DKIM and DMARC badges: pass green, fail red, every other result neutral, the domain (and
// the reason) in the title. The results are computed by the worker after the e-mail is stored,
// usually within a second; while they are pending the pane asks for the detail again every
// AUTH_POLL_MS, up to AUTH_POLLS times, and only while it is still on the page.
const AUTH_POLL_MS = 1000;
const AUTH_POLLS = 30;

function authBadge(label, outcome, about) {
  const result = outcome ? outcome.result : "none";
  const tone = result === "pass" ? "pass" : result === "fail" ? "fail" : "other";
  const title = [about, outcome && outcome.reason].filter(Boolean).join(" — ");
  return h("span", { class: `auth ${tone}`, title: title || `${label}: ${result}` }, `${label} ${result}`);
}

function authBadges(results) {
  if (results.status === "pending") return [h("span", { class: "auth other pending" }, "Checking SPF, DKIM, DMARC…")];
  if (results.status !== "done") return [h("span", { class: "auth other" }, "Authentication not checked")];
  const dkim = results.dkim.length
    ? results.dkim.map((signature) => authBadge("DKIM", signature,
      `d=${signature.domain || "?"} s=${signature.selector || "?"}`))
    : [authBadge("DKIM", { result: "none", reason: "not signed" }, "")];
  const dmarc = results.dmarc;
  return [authBadge("SPF", results.spf, results.spf && `${results.spf.identity} ${results.spf.domain} from ${results.spf.ip}`),
    ...dkim,
    authBadge("DMARC", dmarc, dmarc && [dmarc.domain, dmarc.policy && `policy ${dmarc.policy}`].filter(Boolean).join(", "))];
}

/** The badges of `email`, refreshed in place while its results are pending. */
function authentication(email) {
  const cell = h("dd", { class: "auth-results", "aria-live": "polite" }, authBadges(email.auth_results));
  let polls = 0;
  async function poll() {
    if (!cell.isConnected && polls > 0) return; // the pane was replaced: stop asking
    polls += 1;
    try {
      const fresh = await api("GET", `/emails/${email.id}`);
      email.auth_results = fresh.auth_results;
      fill(cell, authBadges(fresh.auth_results));
    } catch {
      return; // the e-mail went, or the session did: the pane says so elsewhere
    }
    if (email.auth_results.status === "pending" && polls < AUTH_POLLS) setTimeout(poll, AUTH_POLL_MS);
  }
  if (email.auth_results.status === "pending") setTimeout(poll, AUTH_POLL_MS);
  return cell;
}

/** The reading pane of `email` (the detail): `actions.toggleRead()`, `actions.remove()`,
 * `actions.filterTag(tag)` and `actions.tagsChanged(email)` are the inbox page's, which keeps
 * its list in step. */
export function emailPane(email, actions) {
  const emailId = email.id;
  const box = errorBox();
  const panels = {
    text: () => h("pre", { class: "body-text" }, email.body_text || "(no text part)"),
    html: htmlPanel,
    source: () => (email.body_html ? sourcePanel(email, box) : h("p", {}, "This e-mail has no HTML part.")),
    headers: () => h("table", { class: "headers" }, h("tbody", {},
      email.headers.map((header) => h("tr", {}, h("th", { scope: "row" }, header.name), h("td", {}, header.value))))),
    raw: rawPanel,
    attachments: () => email.attachments.length
      ? h("ul", { class: "list" }, email.attachments.map(attachmentRow))
      : h("p", {}, "No attachments."),
    // The checks' tabs: email_checks.js.
    htmlcheck: () => htmlCheckPanel(email, box),
    links: () => linksPanel(email, box),
    release: () => releasePanel(email),
  };
  const names = { text: "Text", html: "HTML", source: "HTML source", headers: "Headers", raw: "Raw", attachments: `Attachments (${email.attachments.length})`,
    htmlcheck: "HTML check", links: "Links", release: "Release" };
  const panel = h("div", { role: "tabpanel", id: "panel", tabindex: "0" });
  const tabs = Object.keys(panels).map((key) => h("button", {
    type: "button", role: "tab", id: `tab-${key}`, "aria-controls": "panel",
    onclick: () => select(key), onkeydown: arrows,
  }, names[key]));

  function select(key) {
    for (const tab of tabs) {
      const on = tab.id === `tab-${key}`;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
    }
    panel.setAttribute("aria-labelledby", `tab-${key}`);
    fill(panel, panels[key]());
  }

  function arrows(event) {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step) return;
    const next = tabs[(tabs.indexOf(event.target) + step + tabs.length) % tabs.length];
    next.focus();
    next.click();
  }

  function htmlPanel() {
    if (!email.body_html) return h("p", {}, "This e-mail has no HTML part.");
    // Shown at once; again with its inline images once they are loaded (attachment_images.js).
    const holder = h("div", {}, htmlFrame(email.body_html));
    withInlineImages(email).then((html) => { if (html !== email.body_html && holder.isConnected) fill(holder, htmlFrame(html)); });
    return holder;
  }

  /** A button saving the authenticated download `path` under `filename`. */
  function saveButton(label, path, filename) {
    return h("button", { type: "button", onclick: async () => {
      try {
        const blob = await download(path);
        const link = h("a", { href: URL.createObjectURL(blob), download: filename });
        document.body.append(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(link.href), 10000);
      } catch (error) {
        showError(box, error);
      }
    } }, label);
  }

  function attachmentRow(attachment) {
    return h("li", { class: "row" }, thumbnail(email, attachment),
      h("span", { class: "grow" }, attachment.filename, " ",
        h("small", {}, `${attachment.content_type}, ${attachment.size_bytes} bytes`), attachmentChecksums(email, attachment)),
      saveButton(`Download ${attachment.filename}`, `/emails/${emailId}/attachments/${attachment.id}`,
        attachment.filename));
  }

  /** The raw source as text (a text node: never parsed as HTML), fetched when the tab opens,
   * and the button saving it as `<id>.eml`. */
  function rawPanel() {
    const path = `/inboxes/${email.inbox_id}/emails/${emailId}/raw`;
    const source = h("pre", { class: "body-text raw-source" }, "Loading…");
    download(path).then((blob) => blob.text()).then((text) => fill(source, text),
      (error) => { fill(source); showError(box, error); });
    return h("div", {}, h("p", {}, saveButton("Download raw source (.eml)", path, `${emailId}.eml`)), source);
  }

  async function act(action) {
    box.hidden = true;
    try {
      await action();
    } catch (error) {
      showError(box, error);
    }
  }

  const readButton = h("button", { type: "button", onclick: () => act(async () => {
    await actions.toggleRead(email);
    fill(readButton, email.is_read ? "Mark unread" : "Mark read");
  }) }, email.is_read ? "Mark unread" : "Mark read");
  const pane = h("article", { class: "email", "aria-labelledby": "email-subject" },
    h("p", { class: "back" }, h("a", { href: `/inboxes/${email.inbox_id}` }, "← Back to the list")),
    h("h2", { id: "email-subject" }, email.subject || "(no subject)"),
    h("dl", { class: "headline" },
      h("dt", {}, "From"), h("dd", { class: "sender" }, sender(email)),
      h("dt", {}, "To"), h("dd", {}, [email.to_address, ...email.cc].join(", ")),
      // Sent with the inbox's SMTP credentials: whom the application addressed it to.
      email.envelope_to && [h("dt", {}, "Envelope to"), h("dd", {}, email.envelope_to.join(", "))],
      h("dt", {}, "Received"), h("dd", {}, h("time", { datetime: email.received_at }, when(email.received_at)), " · ", spam(email.spam_score), spamReasons(email)),
      spamEngine(email),
      h("dt", {}, "Authentication"), authentication(email),
      unsubscribe(email),
      h("dt", {}, "Tags"), h("dd", {}, tagEditor(email, { onPick: actions.filterTag,
        onChange: () => actions.tagsChanged(email) }))),
    h("div", { class: "toolbar" }, readButton,
      h("button", { type: "button", class: "danger", "aria-keyshortcuts": "Delete",
        onclick: () => act(() => actions.remove(email)) }, "Delete")),
    box, found(email), thumbnailStrip(email),
    h("div", { role: "tablist", "aria-label": "Views of the e-mail", class: "tabs" }, tabs), panel);
  select(email.body_html ? "html" : "text");
  return pane;
}
