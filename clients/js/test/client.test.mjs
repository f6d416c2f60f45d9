// The client against a running Burnbox (BURNBOX_URL, BURNBOX_API_KEY, BURNBOX_DOMAIN and
// BURNBOX_SMTP name it), with mail sent over its SMTP server. Run: npm run build && npm test.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { test } from "node:test";

import { Burnbox, BurnboxError, EmailNotReceived } from "burnbox-client";

import { send } from "./smtp.mjs";

const alias = (prefix) => `${prefix}-${randomBytes(4).toString("hex")}`;

/** A client whose requests are counted, by method and path. */
function counted() {
  const requests = [];
  const client = new Burnbox({
    fetch: (url, init) => {
      requests.push(`${init.method} ${new URL(url).pathname}`);
      return fetch(url, init);
    },
  });
  return { client, requests };
}

test("settings come from the environment, and a trailing /api/v1 is accepted", () => {
  const client = new Burnbox();
  assert.equal(client.api, `${process.env.BURNBOX_URL}/api/v1`);
  assert.equal(client.domain, process.env.BURNBOX_DOMAIN);
  assert.equal(new Burnbox({ url: `${process.env.BURNBOX_URL}/api/v1/` }).api, client.api);
  assert.throws(() => new Burnbox({ url: "", apiKey: "" }), /give url and apiKey/);
});

test("an inbox is created, mail is awaited in one request, read, downloaded and deleted",
  async () => {
    const { client, requests } = counted();
    const name = alias("js");
    const inbox = await client.createInbox({ alias: name, ttl: "1h" });
    assert.equal(inbox.address, `${name}@${process.env.BURNBOX_DOMAIN}`);
    assert.equal(inbox.alias, name);
    assert.ok(Date.parse(inbox.expiresAt) > Date.now() + 50 * 60_000);

    requests.length = 0;
    const waiting = client.waitForEmail(inbox, { subject: "sign-in", timeout: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the wait is in before the mail
    await send({ to: inbox.address, subject: "Your sign-in code",
      text: "Your verification code is 482913.",
      html: '<p>Code: 482913. <a href="https://shop.example/help">Help</a></p>',
      attachment: "a,b\n1,2\n" });
    const email = await waiting;
    assert.deepEqual(requests, [`GET /api/v1/inboxes/${inbox.id}/emails/wait`]);
    assert.deepEqual(email.codes, ["482913"]);
    assert.deepEqual(email.links, [{ href: "https://shop.example/help", text: "Help" }]);
    assert.match(email.text, /482913/);
    assert.match(email.html, /<a /);
    assert.equal(email.fromAddress, "app@shop.example");
    assert.equal(email.toAddress, inbox.address);
    const [attachment] = email.attachments;
    assert.equal(attachment.filename, "report.csv");
    assert.equal(Buffer.from(await client.getAttachment(attachment)).toString(), "a,b\n1,2\n");
    assert.equal(Buffer.from(await client.getAttachment(email.id, attachment.id)).toString(),
      "a,b\n1,2\n");
    // The worker's checks: the checksums come a moment after the mail; no spam engine here.
    const checked = await client.waitForChecks(email, { timeout: "10s" });
    assert.deepEqual(checked.attachments[0].checksums, {
      md5: createHash("md5").update("a,b\n1,2\n").digest("hex"),
      sha1: createHash("sha1").update("a,b\n1,2\n").digest("hex"),
      sha256: createHash("sha256").update("a,b\n1,2\n").digest("hex") });
    assert.equal(checked.spamEngine, null);
    assert.equal(checked.listUnsubscribe, null);
    const raw = Buffer.from(await client.getRaw(email)).toString();
    assert.match(raw, /^Subject: Your sign-in code\r?$/m);
    assert.equal(Buffer.from(await client.getRaw(email.id)).toString(), raw);

    // The plain pages a browser test opens: the same key, as a header.
    const htmlUrl = client.viewUrl(email);
    assert.equal(htmlUrl, `${client.api.replace(/\/api\/v1$/, "")}/view/${email.id}.html`);
    assert.equal(client.viewUrl(email.id, { remoteImages: true }), `${htmlUrl}?remote_images=true`);
    const page = await fetch(htmlUrl, { headers: client.viewHeaders() });
    assert.equal(page.headers.get("content-type"), "text/html; charset=utf-8");
    assert.match(await page.text(), /482913/);
    const text = await fetch(client.viewUrl(email, { part: "text" }), { headers: client.viewHeaders() });
    assert.equal(text.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.match(await text.text(), /482913/);
    assert.equal((await fetch(htmlUrl)).status, 401);
    assert.throws(() => client.viewUrl(email, { part: "raw" }), /html or text/);

    await send({ to: inbox.address, subject: "Newsletter", text: "Nothing to see." });
    const both = await client.waitForEmails(inbox.id, { count: 2, timeout: "10s" });
    assert.deepEqual(both.map((found) => found.subject), ["Your sign-in code", "Newsletter"]);
    const next = await client.waitForEmail(inbox, { after: email.id, timeout: 10_000 });
    assert.equal(next.subject, "Newsletter");
    assert.equal((await client.waitForEmail(inbox, { q: "code:482913", from: "shop" })).id,
      email.id);

    const listed = await client.listEmails(inbox);
    assert.deepEqual(listed.map((found) => found.subject), ["Newsletter", "Your sign-in code"]);
    assert.deepEqual((await client.listEmails(inbox, { q: "code:482913" })).map((f) => f.id),
      [email.id]);
    assert.equal((await client.getEmail(email.id)).subject, "Your sign-in code");
    await client.deleteEmail(next.id);
    assert.deepEqual((await client.listEmails(inbox)).map((found) => found.id), [email.id]);
    await assert.rejects(client.getEmail(next.id), { status: 404, code: "not_found" });

    const extended = await client.extendInbox(inbox, { duration: "30m" });
    assert.ok(Date.parse(extended.expiresAt) > Date.parse(inbox.expiresAt));
    assert.ok((await client.listInboxes()).some((listed) => listed.id === inbox.id));
    await client.deleteInbox(inbox);
    await assert.rejects(client.getInbox(inbox.id), { status: 404, code: "not_found" });
  });

test("an inbox address is taken wherever an inbox id is", async () => {
  const first = new Burnbox();
  const inbox = await first.createInbox();
  // A client that never saw the inbox: it looks the address up once, then remembers it.
  const { client, requests } = counted();
  const address = inbox.address.toUpperCase();
  assert.equal((await client.getInbox(address)).id, inbox.id);
  assert.deepEqual(requests, [
    `GET /api/v1/inboxes/by-address/${encodeURIComponent(inbox.address.toLowerCase())}`,
    `GET /api/v1/inboxes/${inbox.id}`]);
  await send({ to: inbox.address, subject: "Hello by address", text: "Code 555123 is yours" });
  requests.length = 0;
  const email = await client.waitForEmail(address, { subject: "by address", timeout: 10_000 });
  // A wait by address goes by the address itself (an address at a catch-all domain may have
  // no inbox yet).
  assert.deepEqual(requests,
    [`GET /api/v1/inboxes/by-address/${encodeURIComponent(address)}/emails/wait`]);
  assert.deepEqual(email.codes, ["555123"]);
  assert.equal((await client.listEmails(address)).length, 1);
  assert.equal((await client.extendInbox(address)).id, inbox.id);
  await client.deleteInbox(address);
  await assert.rejects(client.getInbox(address), (error) => {
    assert.ok(error instanceof BurnboxError);
    assert.equal(error.status, 404);
    assert.match(error.message, new RegExp(`no inbox ${address}`));
    return true;
  });
  // An address used again names its new inbox, even where the old one was remembered.
  const again = await new Burnbox().createInbox({ alias: inbox.alias });
  await send({ to: again.address, subject: "Second life", text: "hello" });
  assert.equal((await first.waitForEmail(inbox.address, { timeout: 10_000 })).inboxId, again.id);
  await first.deleteInbox(again.address);
});

test("a wait in vain names the inbox address, the filter and the timeout", async () => {
  const client = new Burnbox();
  const inbox = await client.createInbox();
  try {
    await assert.rejects(client.waitForEmail(inbox.id, { subject: "never sent", timeout: 200 }),
      (error) => {
        assert.ok(error instanceof EmailNotReceived);
        assert.equal(error.message, `0 of 1 e-mail(s) matching subject "never sent" arrived ` +
          `in inbox ${inbox.address} within 200 ms`);
        assert.equal(error.inbox, inbox.address);
        assert.deepEqual(error.received, []);
        return true;
      });
    await send({ to: inbox.address, subject: "Only one", text: "hello" });
    await assert.rejects(client.waitForEmails(inbox.address,
      { count: 2, from: "shop.example", timeout: "1s" }), (error) => {
      assert.equal(error.message, `1 of 2 e-mail(s) matching from "shop.example" arrived in ` +
        `inbox ${inbox.address} within 1s`);
      assert.deepEqual(error.received.map((email) => email.subject), ["Only one"]);
      return true;
    });
  } finally {
    await client.deleteInbox(inbox);
  }
});

test("API errors reject with the envelope's status, code and details", async () => {
  const client = new Burnbox();
  await assert.rejects(client.createInbox({ alias: "-no-" }), (error) => {
    assert.ok(error instanceof BurnboxError);
    assert.equal(error.name, "BurnboxError");
    assert.equal(error.status, 400);
    assert.equal(error.code, "validation_error");
    return true;
  });
  const inbox = await client.createInbox();
  try {
    await assert.rejects(client.listEmails(inbox, { q: 'subject:"open' }),
      { status: 400, message: /offset 8/ });
    await assert.rejects(client.waitForEmail(inbox, { timeout: "1h" }), (error) => {
      assert.equal(error.status, 400);
      assert.deepEqual(Object.keys(error.details), ["timeout"]);
      return true;
    });
  } finally {
    await client.deleteInbox(inbox);
  }
  await assert.rejects(new Burnbox({ apiKey: `bb_${"0".repeat(64)}` }).listInboxes(),
    { status: 401 });
});

test("without a domain, the key's one usable domain is found once", async () => {
  const { client, requests } = counted();
  const noDomain = new Burnbox({ domain: "", fetch: client.fetch });
  const made = [await noDomain.createInbox(), await noDomain.createInbox()];
  assert.deepEqual(requests, ["GET /api/v1/my/domains", "POST /api/v1/inboxes",
    "POST /api/v1/inboxes"]);
  for (const inbox of made) {
    assert.ok(inbox.address.endsWith(`@${process.env.BURNBOX_DOMAIN}`));
    await noDomain.deleteInbox(inbox);
  }
});

test("a message put over HTTP is read as any other", async () => {
  const client = new Burnbox();
  const inbox = await client.createInbox({ alias: alias("put") });
  const email = await client.putMessage(inbox, {
    from: "Acme <noreply@acme.test>", subject: "Seeded", text: "Your code is 660321.",
    html: '<p>Code 660321 <img src="cid:logo"></p>', tags: ["seeded"],
    attachments: [{ filename: "logo.png", content: new Uint8Array([137, 80, 78, 71]), contentId: "logo" },
      { filename: "notes.txt", content: "plain notes" }],
  });
  assert.equal(email.subject, "Seeded");
  assert.deepEqual(email.codes, ["660321"]);
  assert.equal((await client.waitForEmail(inbox, { subject: "Seeded", timeout: 10_000 })).id, email.id);
  const [logo, notes] = email.attachments;
  assert.deepEqual([logo.inline, logo.contentId], [true, "logo"]);
  assert.deepEqual([...await client.getAttachment(logo)], [137, 80, 78, 71]);
  assert.equal(new TextDecoder().decode(await client.getAttachment(notes)), "plain notes");
  assert.equal(email.headers.find((one) => one.name === "X-Tags").value, "seeded");
  await assert.rejects(client.putMessage(inbox, { from: "not an address" }), (error) => {
    assert.ok(error instanceof BurnboxError);
    assert.deepEqual([error.status, error.code], [400, "validation_error"]);
    return true;
  });
});

test("tags are waited for, read, set, added and removed", async () => {
  const client = new Burnbox();
  const inbox = await client.createInbox({ alias: alias("js-tags"), ttl: "1h" });
  await send({ to: inbox.address, subject: "Untagged", text: "Nothing here." });
  await send({ to: inbox.address, subject: "Welcome", text: "Hi.", tags: "Signup, beta" });
  const email = await client.waitForEmail(inbox, { tag: "SIGNUP", timeout: 10_000 });
  assert.equal(email.subject, "Welcome");
  assert.deepEqual(email.tags, ["beta", "Signup"]);
  assert.deepEqual(await client.addTags(email.id, ["vip"]), ["beta", "Signup", "vip"]);
  assert.deepEqual(await client.removeTag(email.id, "beta"), ["Signup", "vip"]);
  assert.deepEqual(await client.setTags(email.id, ["only/this"]), ["only/this"]);
  assert.deepEqual((await client.listEmails(inbox, { q: 'tag:"only/this"' })).map((f) => f.id),
    [email.id]);
  await assert.rejects(client.setTags(email.id, Array.from({ length: 10_000 }, (_, n) => `t${n}`)),
    (error) => error instanceof BurnboxError && error.status === 400);
  await client.deleteInbox(inbox);
});
