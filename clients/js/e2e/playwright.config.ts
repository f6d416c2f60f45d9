// The package's own Playwright suite: the fixtures of burnbox-client/playwright against a
// running Burnbox and the sign-up application of signup-app.mjs (APP_URL). Burnbox is named
// in the `use` block here (from E2E_BURNBOX_URL and E2E_BURNBOX_API_KEY), not by the
// BURNBOX_* variables, to test that path. Chromium is Debian's (CHROMIUM overrides).
import { defineConfig } from "@playwright/test";
import type { BurnboxTestOptions } from "burnbox-client/playwright";

export default defineConfig<BurnboxTestOptions>({
  testDir: ".",
  reporter: "list",
  workers: 1,
  use: {
    baseURL: process.env.APP_URL,
    launchOptions: { executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium" },
    burnboxOptions: {
      url: process.env.E2E_BURNBOX_URL,
      apiKey: process.env.E2E_BURNBOX_API_KEY,
      domain: "burnbox.test",
    },
  },
});
