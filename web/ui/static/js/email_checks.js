// Issue #40's checks in the reading pane: the "HTML check" tab (a score per client family from
// caniemail.com's data, and the features some family does not fully support), the "Links" tab
// (a button that asks every link now, and the table of the last answers), and the reasons of
// the spam score (a disclosure next to it). Every value is put in as text (h() never parses
// markup): notes and URLs come from the data file and from the e-mail.

import { api } from "./api.js";
import { h, fill, showError } from "./dom.js";

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
