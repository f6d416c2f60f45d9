// The checks of an e-mail in the reading pane: the "HTML check" tab (a score per client family from
// caniemail.com's data, and the features some family does not fully support), the "Links" tab
// (a button that asks every link now, and the table of the last answers), and the reasons of
// the spam score (a disclosure next to it). Every value is put in as text (h() never parses
// markup): notes and URLs come from the data file and from the e-mail.

import { api } from "./api.js";
import { copy, h, fill, showError } from "./dom.js";

const FAMILY_NAMES = { "apple-mail": "Apple Mail", gmail: "Gmail", outlook: "Outlook", yahoo: "Yahoo! Mail",
  "samsung-email": "Samsung Email", thunderbird: "Thunderbird", aol: "AOL", protonmail: "Proton Mail",
  fastmail: "Fastmail", hey: "HEY" };
const family = (name) => FAMILY_NAMES[name] || name;

/** The spam score's reasons as a disclosure (nothing when none were kept or the score is 0). */
export function spamReasons(email) {
  if (!email.spam_reasons || !email.spam_reasons.length) return null;
  return h("details", { class: "spam-reasons" }, h("summary", {}, "Why this score"),
    h("ul", {}, email.spam_reasons.map((reason) => h("li", {},
      h("strong", {}, `+${Number(reason.points).toFixed(1)}`), " ", reason.description,
      reason.count > 1 ? ` (×${reason.count})` : ""))));
}

/** The "HTML check" panel, fetched when the tab opens. */
export function htmlCheckPanel(email, box) {
  const panel = h("div", { class: "html-check" }, h("p", { class: "note" }, "Checking…"));
  api("GET", `/emails/${email.id}/html-check`).then((check) => {
    if (!check.html) return fill(panel, h("p", {}, "This e-mail has no HTML part."));
    fill(panel,
      h("p", { class: "note" }, `${check.features_used} HTML and CSS features used. Scores: the share of them each client family supports, partial support counting half (data: caniemail.com).`),
      h("ul", { class: "scores" }, check.scores.map((score) => h("li", { class: score.score < 60 ? "low" : score.score < 90 ? "some" : "good" },
        h("span", { class: "family" }, family(score.family)), h("strong", {}, `${Math.round(score.score)}%`)))),
      check.issues.length
        ? h("table", { class: "headers issues" },
          h("caption", { class: "sr-only" }, "Features not fully supported"),
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Feature"), h("th", { scope: "col" }, "Not supported"), h("th", { scope: "col" }, "Partly supported"))),
          h("tbody", {}, check.issues.map((issue) => h("tr", {},
            h("th", { scope: "row" }, h("a", { href: issue.url, target: "_blank", rel: "noopener noreferrer" }, issue.title)),
            h("td", {}, issue.unsupported.map(family).join(", ") || "—"),
            h("td", {}, issue.partial.map(family).join(", ") || "—")))))
        : h("p", {}, "Every feature used is supported by every client family."));
  }, (error) => { fill(panel); showError(box, error); });
  return panel;
}

/** The "Links" panel: the last check's results, and a button to check again now. */
export function linksPanel(email, box) {
  const results = h("div", {});
  const button = h("button", { type: "button", onclick: async () => {
    button.disabled = true;
    fill(results, h("p", { class: "note", role: "status" }, "Checking the links (10 seconds at most)…"));
    try {
      show(await api("POST", `/emails/${email.id}/link-check`));
    } catch (error) {
      fill(results);
      showError(box, error);
    } finally {
      button.disabled = false;
    }
  } }, "Check links");

  function show(check) {
    if (!check.checked_at) return fill(results, h("p", { class: "note" }, "Not checked yet."));
    if (!check.links.length) return fill(results, h("p", {}, "This e-mail has no links."));
    fill(results, h("table", { class: "headers link-results" },
      h("caption", { class: "sr-only" }, "Link check results"),
      h("thead", {}, h("tr", {}, ["Link", "Status", "Redirect", "Time"].map((name) => h("th", { scope: "col" }, name)))),
      h("tbody", {}, check.links.map((link) => h("tr", { class: link.ok ? "" : "failed" },
        h("td", {}, link.href),
        h("td", {}, link.error ? link.error : `${link.status}${link.method === "GET" ? " (GET)" : ""}`),
        h("td", {}, link.redirect_to ? `→ ${link.final_url} (${link.final_status})` : "—"),
        h("td", {}, `${link.elapsed_ms} ms`))))),
    check.skipped ? h("p", { class: "note" }, `${check.skipped} more links were not checked.`) : null);
  }

  api("GET", `/emails/${email.id}/link-check`).then(show, (error) => showError(box, error));
  return h("div", {}, h("p", {}, button), results);
}

// --- The spam engine's verdict, the unsubscribe headers, the attachments' checksums ----------
// The engine's verdict and the checksums are stored by the worker a moment after the e-mail;
// while one is missing the pane asks for the detail again every CHECKS_POLL_MS, up to
// CHECKS_POLLS times, only while the element waiting for it is still on the page.
const CHECKS_POLL_MS = 1000;
const CHECKS_POLLS = 30;
const ENGINE_NAMES = { spamassassin: "SpamAssassin", rspamd: "rspamd" };

/** Ask for the detail of `email` until `ready(detail)`, while `element` is on the page; then
 * `show(detail)`. */
function refreshUntil(email, element, ready, show) {
  let polls = 0;
  async function poll() {
    if (!element.isConnected && polls > 0) return; // the pane was replaced: stop asking
    polls += 1;
    let fresh;
    try {
      fresh = await api("GET", `/emails/${email.id}`);
    } catch {
      return; // the e-mail went, or the session did: the pane says so elsewhere
    }
    if (ready(fresh)) show(fresh);
    else if (polls < CHECKS_POLLS) setTimeout(poll, CHECKS_POLL_MS);
  }
  setTimeout(poll, CHECKS_POLL_MS);
}

function engineVerdict(engine) {
  const name = ENGINE_NAMES[engine.engine] || engine.engine || "The spam engine";
  if (engine.status === "pending") return h("span", { class: "note" }, "Asking the spam engine…");
  if (engine.status !== "done") return h("span", { class: "spam" }, `${name}: not checked — ${engine.reason}`);
  const verdict = engine.is_spam ? "spam" : "not spam";
  const action = engine.action ? `, ${engine.action}` : "";
  return [h("span", { class: `spam ${engine.is_spam ? "high" : "low"}` },
    `${name} ${Number(engine.score).toFixed(1)} (spam from ${Number(engine.threshold).toFixed(1)}): ${verdict}${action}`),
  engine.rules.length ? h("details", { class: "spam-reasons engine-rules" }, h("summary", {}, `${engine.rules.length} rules`),
    h("table", { class: "headers" },
      h("caption", { class: "sr-only" }, `Rules of ${name}`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Points"), h("th", { scope: "col" }, "Rule"), h("th", { scope: "col" }, "Description"))),
      h("tbody", {}, engine.rules.map((rule) => h("tr", {},
        h("td", { class: "points" }, rule.score === null ? "—" : Number(rule.score).toFixed(1)),
        h("th", { scope: "row" }, h("code", {}, rule.name)),
        h("td", {}, rule.description || "—")))))) : null];
}

/** The spam engine's headline row (nothing when no engine looked at the e-mail), refreshed in
 * place while the engine has not answered. */
export function spamEngine(email) {
  if (!email.spam_engine) return null;
  const cell = h("dd", { class: "spam-engine", "aria-live": "polite" }, engineVerdict(email.spam_engine));
  if (email.spam_engine.status === "pending") {
    refreshUntil(email, cell, (fresh) => fresh.spam_engine && fresh.spam_engine.status !== "pending", (fresh) => {
      email.spam_engine = fresh.spam_engine;
      fill(cell, engineVerdict(fresh.spam_engine));
    });
  }
  return [h("dt", {}, "Spam engine"), cell];
}

/** The unsubscribe headers checked, as a headline row (nothing when the e-mail has none). */
export function unsubscribe(email) {
  const found = email.list_unsubscribe;
  if (!found) return null;
  const offer = found.one_click ? "One-click unsubscribe"
    : found.links.some((link) => link.valid) ? "Unsubscribe link, no one-click" : "No usable unsubscribe link";
  const tone = found.problems.length ? (found.one_click ? "other" : "fail") : "pass";
  return [h("dt", {}, "Unsubscribe"), h("dd", { class: "unsubscribe" },
    h("span", { class: `auth ${tone}` }, offer),
    h("details", { class: "spam-reasons" }, h("summary", {}, found.problems.length ? `${found.problems.length} ${found.problems.length > 1 ? "problems" : "problem"}` : "Details"),
      h("ul", {},
        found.links.map((link) => h("li", {}, h("code", {}, link.uri), link.valid ? "" : " (not usable)")),
        found.post !== null ? h("li", {}, "List-Unsubscribe-Post: ", h("code", {}, found.post)) : null,
        found.problems.map((problem) => h("li", { class: "problem" }, problem)))))];
}

function checksumTable(attachment) {
  return h("table", { class: "checksums" },
    h("caption", { class: "sr-only" }, `Checksums of ${attachment.filename}`),
    h("tbody", {}, [["MD5", "md5"], ["SHA-1", "sha1"], ["SHA-256", "sha256"]].map(([label, key]) => h("tr", {},
      h("th", { scope: "row" }, label), h("td", {}, h("code", {}, attachment.checksums[key])),
      h("td", {}, h("button", { type: "button", class: "small", "aria-label": `Copy the ${label} of ${attachment.filename}`,
        onclick: () => copy(attachment.checksums[key]) }, "Copy"))))));
}

/** An attachment's checksums with copy buttons; while the worker has not computed them, a note
 * that replaces itself with them once it has. */
export function attachmentChecksums(email, attachment) {
  if (attachment.checksums) return checksumTable(attachment);
  const note = h("small", { class: "note checksums", role: "status" }, "Computing checksums…");
  const fresh = (detail) => detail.attachments.find((item) => item.id === attachment.id);
  refreshUntil(email, note, (detail) => Boolean(fresh(detail) && fresh(detail).checksums), (detail) => {
    attachment.checksums = fresh(detail).checksums;
    note.replaceWith(checksumTable(attachment));
  });
  return note;
}
