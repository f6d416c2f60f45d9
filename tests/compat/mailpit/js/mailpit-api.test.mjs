// mailpit-api (npm, pinned in package-lock.json) against a Burnbox Mailpit scope, as its users
// point it at Mailpit: the scope's base URL, the team API key as the Basic password. The pytest
// test that runs this (tests/compat/mailpit/test_mailpit_api.py) mailed the inbox over SMTP
// first: a rich message (subject RICH_SUBJECT: HTML, an inline image, a CSV attachment,
// non-ASCII headers) and two plain ones ("Plain one", "Plain two", the second tagged
// "invoice" by its X-Tags header). The tests run in order and share that mail.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MailpitClient } from "mailpit-api";

const { MAILPIT_URL, BURNBOX_URL, BURNBOX_API_KEY, RICH_SUBJECT, CSV } = process.env;
const mailpit = new MailpitClient(MAILPIT_URL, {
  auth: { username: "ci", password: BURNBOX_API_KEY },
});
let rich;

// The native API, with the same key as a Bearer token: it must see what mailpit-api did.
async function native(path) {
  const response = await fetch(`${BURNBOX_URL}/api/v1${path}`, {
    headers: { Authorization: `Bearer ${BURNBOX_API_KEY}` },
  });
  assert.equal(response.status, 200, await response.clone().text());
  return response.json();
}

test("getInfo and getConfiguration describe the scope, spam checks off", async () => {
  const info = await mailpit.getInfo();
  assert.equal(info.Messages, 3);
  assert.equal(info.Unread, 3);
  assert.deepEqual(info.Tags, { invoice: 1 });
  const config = await mailpit.getConfiguration();
  assert.equal(config.SpamAssassin, false);
  assert.equal(typeof config.MessageRelay.Enabled, "boolean");
});

test("listMessages pages the scope, newest first", async () => {
  const all = await mailpit.listMessages();
  assert.equal(all.total, 3);
  assert.equal(all.unread, 3);
  assert.equal(all.messages_count, 3);
  assert.deepEqual(all.tags, ["invoice"]);
  assert.deepEqual(all.messages.map((m) => m.Subject), ["Plain two", "Plain one", RICH_SUBJECT]);
  const page = await mailpit.listMessages(1, 1);
  assert.equal(page.start, 1);
  assert.deepEqual(page.messages.map((m) => m.Subject), ["Plain one"]);
  assert.match(all.messages[0].Created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
});

test("searchMessages and waitForMessage find the rich message", async () => {
  const found = await mailpit.searchMessages({ query: 'subject:"Bestellung" has:attachment' });
  assert.equal(found.messages_count, 1);
  assert.equal(found.messages[0].Attachments, 1);
  rich = await mailpit.waitForMessage({ query: "from:zoe@shop.example subject:Bestellung" });
  assert.equal(rich.Subject, RICH_SUBJECT);
  assert.equal(rich.From.Name, "Zoë Müller");
  assert.deepEqual(rich.Cc, [{ Name: "Ops", Address: "ops@shop.example" }]);
  assert.equal(rich.Attachments[0].FileName, "report.csv");
  assert.equal(rich.Inline[0].ContentID, "logo@shop.example");
  assert.match(rich.HTML, /<b>Bestellung<\/b>/);
  const tagged = await mailpit.waitForMessages({ query: "tag:invoice", count: 1, exact: true });
  assert.equal(tagged.messages[0].Subject, "Plain two");
});

test("getMessageSummary(latest), headers, parts and source", async () => {
  const latest = await mailpit.getMessageSummary();
  assert.equal(latest.Subject, "Plain two");
  const headers = await mailpit.getMessageHeaders(rich.ID);
  assert.deepEqual(headers.Cc, ["Ops <ops@shop.example>"]);
  const part = await mailpit.getMessageAttachment(rich.ID, rich.Attachments[0].PartID);
  assert.equal(await part.text(), CSV);
  const source = await mailpit.getMessageSource(rich.ID);
  assert.match(source, /filename="report\.csv"/);
});

test("renderMessageHTML and renderMessageText, reading marks read", async () => {
  const html = await mailpit.renderMessageHTML(rich.ID);
  assert.match(html, /Bestellung/);
  const text = await mailpit.renderMessageText(rich.ID);
  assert.match(text, /Danke für Ihre Bestellung\./);
  assert.equal((await native(`/emails/${rich.ID}`)).is_read, true);
});

test("setReadStatus by IDs, by search and for the whole scope", async () => {
  assert.equal(await mailpit.setReadStatus({ IDs: [rich.ID], Read: false }), "ok");
  assert.equal((await native(`/emails/${rich.ID}`)).is_read, false);
  await mailpit.setReadStatus({ Search: "subject:Plain", Read: true });
  assert.equal((await mailpit.listMessages()).unread, 1);
  await mailpit.setReadStatus({ Read: true });
  assert.equal((await mailpit.listMessages()).unread, 0);
});

test("setTags, getTags, renameTag and deleteTag, as the native API sees them", async () => {
  assert.equal(await mailpit.setTags({ IDs: [rich.ID], Tags: ["alpha", "Beta"] }), "ok");
  assert.deepEqual(await mailpit.getTags(), ["alpha", "Beta", "invoice"]);
  assert.deepEqual((await native(`/emails/${rich.ID}`)).tags, ["alpha", "Beta"]);
  assert.equal(await mailpit.renameTag("alpha", "gamma"), "ok");
  assert.deepEqual((await native(`/emails/${rich.ID}`)).tags, ["Beta", "gamma"]);
  assert.equal(await mailpit.deleteTag("Beta"), "ok");
  assert.deepEqual((await mailpit.getMessageSummary(rich.ID)).Tags, ["gamma"]);
});

test("deleteMessagesBySearch, deleteMessages by IDs, then everything", async () => {
  assert.equal(await mailpit.deleteMessagesBySearch({ query: 'subject:"Plain one"' }), "ok");
  assert.equal((await mailpit.listMessages()).total, 2);
  assert.equal(await mailpit.deleteMessages({ IDs: [rich.ID] }), "ok");
  assert.deepEqual((await mailpit.listMessages()).messages.map((m) => m.Subject), ["Plain two"]);
  assert.equal(await mailpit.deleteMessages(), "ok");
  assert.equal((await mailpit.listMessages()).total, 0);
  await assert.rejects(mailpit.getMessageSummary(), /404/);
});

test("a wrong key is a 401, as Mailpit answers bad credentials", async () => {
  const stranger = new MailpitClient(MAILPIT_URL, { auth: { username: "ci", password: "bb_no" } });
  await assert.rejects(stranger.listMessages(), /401/);
});
