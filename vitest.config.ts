import { readdirSync } from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";
import { leftToExternal } from "./test/external/suites.js";

// npm test's in-process run leaves the external suites to `npm run test:external` (one run each).
const inProcessOnly = process.env.NOVALESS_SUITES === "in-process";
const files = inProcessOnly
  ? readdirSync("test", { recursive: true, encoding: "utf8" }).map((f) => `test/${f}`)
  : [];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...(inProcessOnly ? leftToExternal(files) : [])],
    globalSetup: ["test/global-setup.ts"],
    // Emulator-backed suites start their own servers; two cores, so keep workers few.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 150_000,
    // Errors only: the fault tests provoke warnings by the hundred on purpose; a failing
    // assertion says what went wrong.
    // The SDK's Node 20 notice is known (this machine has Node 20; Lambda runs 22).
    // DEBUG_LOG_LEVEL=info shows the components' logs when a test needs explaining.
    env: {
      NOVALESS_LOG_LEVEL: process.env.DEBUG_LOG_LEVEL ?? "error",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
    hookTimeout: 120_000,
  },
});
