// The fixtures of burnbox-client/playwright. Each test that takes `inbox` writes its id to the
// file E2E_RECORD: the runner of this suite (tests/clients/test_js_client.py in Burnbox) then
// checks that every one of them was deleted, including the inbox of the test that failed.
import { appendFileSync } from "node:fs";

import { expect, test, type Inbox } from "burnbox-client/playwright";

function record(inbox: Inbox): void {
  appendFileSync(process.env.E2E_RECORD ?? "inboxes.txt", `${inbox.id}\n`);
}

test.describe("each test that asks for it", () => {
  for (const n of [1, 2]) {
    test(`gets a fresh, empty inbox of the configured domain (${n})`, async ({ inbox, burnbox }) => {
      record(inbox);
      expect(inbox.address).toMatch(/@burnbox\.test$/);
      expect(await burnbox.listEmails(inbox)).toEqual([]);
    });
  }

  test("that fails still has its inbox deleted", async ({ inbox }) => {
    record(inbox);
    test.fail(); // expected to fail: the suite passes, the fixture's clean-up must run anyway
    expect(inbox.address).toBe("something else");
  });

  test("may delete its inbox itself", async ({ inbox, burnbox }) => {
    record(inbox);
    await burnbox.deleteInbox(inbox.address);
  });
});

test("a sign-up in the browser is confirmed with the mailed code and link", async ({
  page, inbox, burnbox,
}) => {
  record(inbox);
  await page.goto("/");
  await page.getByLabel("E-mail").fill(inbox.address);
  await page.getByRole("button", { name: "Sign up" }).click();
  const email = await burnbox.waitForEmail(inbox.address, { from: "shop.example", timeout: 20_000 });
  await page.getByLabel("Code").fill("000000");
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByRole("heading")).toHaveText("Wrong code");
  await page.goBack();
  await page.getByLabel("Code").fill(email.codes[0]);
  await page.getByRole("button", { name: "Verify" }).click();
  await expect(page.getByRole("heading")).toHaveText("Verified");
  const [link] = email.links.filter((found) => found.text === "Confirm your address");
  await page.goto(link.href);
  await expect(page.getByRole("heading")).toHaveText("Confirmed");
  expect((await page.goto(link.href))?.status()).toBe(404); // a link works once
});

test("a wait in vain fails the test with the address, filter and timeout", async ({ inbox, burnbox }) => {
  record(inbox);
  await expect(burnbox.waitForEmail(inbox, { subject: "never sent", timeout: 100 }))
    .rejects.toThrow(`0 of 1 e-mail(s) matching subject "never sent" arrived in inbox ` +
      `${inbox.address} within 100 ms`);
});

test("the mailed HTML is opened as its reader would see it on a phone", async ({
  page, inbox, burnbox,
}, testInfo) => {
  record(inbox);
  await page.goto("/");
  await page.getByLabel("E-mail").fill(inbox.address);
  await page.getByRole("button", { name: "Sign up" }).click();
  const email = await burnbox.waitForEmail(inbox, { subject: "Confirm your account", timeout: 20_000 });
  // The key for Burnbox's page alone, never for the hosts of the e-mail's images.
  const url = burnbox.viewUrl(email);
  const text = burnbox.viewUrl(email, { part: "text" });
  for (const address of [url, text]) {
    await page.route(address, (route) =>
      route.continue({ headers: { ...route.request().headers(), ...burnbox.viewHeaders() } }));
  }
  await page.setViewportSize({ width: 390, height: 844 });
  const response = await page.goto(url);
  expect(response?.headers()["content-security-policy"]).toContain("sandbox");
  await expect(page.getByText(`Your verification code is ${email.codes[0]}.`)).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("confirm-phone.png"), fullPage: true });
  await page.goto(text);
  await expect(page.locator("body")).toContainText(`Your verification code is ${email.codes[0]}.`);
});
