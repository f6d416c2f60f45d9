// Tags on e-mails: the chips of a list row and of the reading pane (a click filters the list
// by that tag), adding and removing tags in the pane, and a team's Tags page: the tag cloud
// (each tag sized by how many e-mails carry it, renamed or deleted there) and the tag rules
// that tag new mail. The rules of names and limits are the server's (docs/mail.md "Tags").

import { api, cachedGet } from "./api.js";
import { errorBox, field, fill, form, h, notify, showError } from "./dom.js";

/** The search that lists the e-mails carrying `tag`. */
export function tagQuery(tag) {
  return `tag:"${tag}"`;
}

/** One chip per tag of `tags`, each a button calling `onPick(tag)` (filter by it). */
export function tagChips(tags, onPick) {
  if (!tags || !tags.length) return null;
  return h("span", { class: "tags", "aria-label": "Tags" }, tags.map((tag) =>
    h("button", { type: "button", class: "tag", title: `Show the e-mails tagged ${tag}`,
      onclick: () => onPick(tag) }, tag)));
}

/** The reading pane's tags of `email`: chips (a click filters by the tag), a button taking
 * each off and a field adding some (comma-separated). `onPick(tag)` filters the list;
 * `onChange(tags)` hears of every change, so the list row can follow. */
export function tagEditor(email, { onPick, onChange }) {
  const box = errorBox();
  const chips = h("span", { class: "tags" });
  const input = h("input", { id: "f-add-tags", name: "tags", placeholder: "e.g. checkout, beta",
    autocomplete: "off" });

  function draw() {
    fill(chips, email.tags.length ? email.tags.map((tag) => h("span", { class: "tag-edit" },
      h("button", { type: "button", class: "tag", title: `Show the e-mails tagged ${tag}`,
        onclick: () => onPick(tag) }, tag),
      h("button", { type: "button", class: "tag-remove", "aria-label": `Remove the tag ${tag}`,
        onclick: () => change("DELETE", `/emails/${email.id}/tags/${encodeURIComponent(tag)}`) }, "×")))
      : h("small", { class: "note" }, "No tags."));
  }

  async function change(method, path, body) {
    box.hidden = true;
    try {
      email.tags = (await api(method, path, body)).tags;
      draw();
      onChange(email.tags);
      return true;
    } catch (error) {
      showError(box, error);
      return false;
    }
  }

  const add = h("form", { class: "tag-add", "aria-label": "Add tags to this e-mail", onsubmit: async (event) => {
    event.preventDefault();
    const tags = input.value.split(",").map((tag) => tag.trim()).filter(Boolean);
    if (tags.length && await change("POST", `/emails/${email.id}/tags`, { tags })) input.value = "";
  } }, h("label", { for: "f-add-tags", class: "sr-only" }, "Add tags"), input,
    h("button", { type: "submit" }, "Add tag"));
  draw();
  return h("div", { class: "tag-editor" }, chips, add, box);
}

/** A team's Tags page: the tag cloud with rename and delete, and the tag rules. */
export async function tagsView(main, orgId, teamId) {
  const base = `/orgs/${orgId}/teams/${teamId}`;
  const [team, cloud, rules] = await Promise.all([cachedGet(base), api("GET", `${base}/tags`),
    api("GET", `${base}/tag-rules`)]);
  const box = errorBox();
  const reload = () => tagsView(main, orgId, teamId);

  async function act(method, path, body, done) {
    box.hidden = true;
    try {
      await api(method, path, body);
      if (done) notify(done);
      await reload();
    } catch (error) {
      showError(box, error);
    }
  }

  const most = Math.max(1, ...cloud.tags.map((tag) => tag.count));
  const tagRows = cloud.tags.map((tag) => h("li", { class: "row" },
    h("span", { class: "grow" },
      h("span", { class: "tag cloud", style: `font-size: ${(0.85 + 0.75 * tag.count / most).toFixed(2)}rem` }, tag.name),
      " ", h("small", {}, `${tag.count} e-mail${tag.count === 1 ? "" : "s"}`)),
    h("button", { type: "button", onclick: () => {
      const name = prompt(`Rename the tag ${tag.name} to:`, tag.name);
      if (name && name !== tag.name) act("PATCH", `${base}/tags/${tag.id}`, { name }, `Tag renamed to ${name}`);
    } }, `Rename ${tag.name}`),
    h("button", { type: "button", class: "danger", onclick: () => confirm(
      `Delete the tag ${tag.name}? It comes off ${tag.count} e-mail${tag.count === 1 ? "" : "s"}.`)
      && act("DELETE", `${base}/tags/${tag.id}`, undefined, `Tag ${tag.name} deleted`) }, `Delete ${tag.name}`)));
  const create = form({ class: "card", "aria-label": "New tag rule" }, [
    field("New mail matching this search", { name: "query", required: true,
      placeholder: "from:shop.example subject:receipt" }),
    field("gets these tags (comma-separated)", { name: "tags", required: true, placeholder: "billing" }),
  ], "Create rule", async (values) => {
    await api("POST", `${base}/tag-rules`, { query: values.query,
      tags: values.tags.split(",").map((tag) => tag.trim()).filter(Boolean) });
    notify("Tag rule created");
    await reload();
  });
  const ruleRows = rules.rules.map((rule) => h("li", { class: "row" },
    h("span", { class: "grow" }, h("code", {}, rule.query), " → ", rule.tags.join(", ")),
    h("button", { type: "button", class: "danger", onclick: () => act("DELETE", `${base}/tag-rules/${rule.id}`,
      undefined, "Tag rule deleted") }, "Delete rule")));
  fill(main, h("p", {}, h("a", { href: "/teams" }, "← Teams")), h("h1", {}, `Tags of ${team.name}`), box,
    h("section", { "aria-labelledby": "cloud-title" }, h("h2", { id: "cloud-title" }, "Tag cloud"),
      tagRows.length ? h("ul", { class: "list", "aria-label": "Tags" }, tagRows)
        : h("p", {}, "No tag yet: tag an e-mail in its reading pane, send one with an X-Tags header, or add a rule.")),
    h("section", { "aria-labelledby": "rules-title" }, h("h2", { id: "rules-title" }, "Tag rules"),
      h("p", { class: "note" }, "A rule tags each new e-mail of the team's inboxes that its search matches (the search box's syntax, without tag:)."),
      create, ruleRows.length ? h("ul", { class: "list", "aria-label": "Tag rules" }, ruleRows)
        : h("p", {}, "No rule yet.")));
}
