/**
 * The Playwright fixtures of Burnbox: `import { test, expect } from "burnbox-client/playwright"`.
 *
 * - `burnbox`: a client for the whole worker;
 * - `inbox`: a fresh inbox for each test that asks for it, deleted after the test whether it
 *   passed or not (one the test deleted itself is fine).
 *
 * Settings: the environment variables BURNBOX_URL (or BURNBOX_API), BURNBOX_API_KEY and
 * BURNBOX_DOMAIN, or else the `burnboxOptions` of the config's `use` block
 * (`{ url, apiKey, domain }`). The environment wins, so a CI job's secrets override a
 * checked-in config. Only a test that asks for a fixture needs Burnbox.
 */

import { test as base, expect } from "@playwright/test";

import { Burnbox, BurnboxError, type BurnboxOptions, type Inbox } from "./index.js";

export { expect };
export * from "./index.js";

/** The options the config's `use` block may set. */
export interface BurnboxTestOptions {
  burnboxOptions: Pick<BurnboxOptions, "url" | "apiKey" | "domain">;
}

export interface BurnboxWorkerFixtures extends BurnboxTestOptions {
  burnbox: Burnbox;
}

export interface BurnboxTestFixtures {
  inbox: Inbox;
}

function fromEnvironment(...names: string[]): string | undefined {
  return names.map((name) => process.env[name]).find((value) => value) || undefined;
}

export const test = base.extend<BurnboxTestFixtures, BurnboxWorkerFixtures>({
  burnboxOptions: [{}, { option: true, scope: "worker" }],

  burnbox: [async ({ burnboxOptions }, use) => {
    const url = fromEnvironment("BURNBOX_URL", "BURNBOX_API") ?? burnboxOptions.url;
    const apiKey = fromEnvironment("BURNBOX_API_KEY") ?? burnboxOptions.apiKey;
    if (!url || !apiKey) {
      throw new Error("burnbox: set BURNBOX_URL and BURNBOX_API_KEY (or burnboxOptions " +
        "{ url, apiKey } in the use block of the Playwright config)");
    }
    const domain = fromEnvironment("BURNBOX_DOMAIN") ?? burnboxOptions.domain;
    await use(new Burnbox({ url, apiKey, domain }));
  }, { scope: "worker" }],

  inbox: async ({ burnbox }, use) => {
    const inbox = await burnbox.createInbox();
    // Playwright returns from use() once the test has ended, passed or failed.
    await use(inbox);
    try {
      await burnbox.deleteInbox(inbox);
    } catch (error) {
      // The test deleted it itself: nothing is left to clean up.
      if (!(error instanceof BurnboxError && error.status === 404)) throw error;
    }
  },
});
