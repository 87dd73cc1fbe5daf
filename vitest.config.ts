import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
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
