import { readdirSync } from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";
import { leftToExternal, REAL_QEMU_SUITES } from "./test/external/suites.js";
import LongestFirst from "./test/sequencer.js";

// npm test's in-process run leaves the external suites to `npm run test:external` (one run each),
// and the real-QEMU files to `npm run test:qemu` (NOVALESS_SUITES=qemu), which runs before it.
const inProcessOnly = process.env.NOVALESS_SUITES === "in-process";
const qemuOnly = process.env.NOVALESS_SUITES === "qemu";
const files = inProcessOnly
  ? readdirSync("test", { recursive: true, encoding: "utf8" }).map((f) => `test/${f}`)
  : [];

/**
 * The unit files load lib/ and run no runtime: they share one module graph per worker thread
 * (isolate: false), so lib/ and the SDK are imported once, not once per file (their import was
 * most of each file's time). Each file restores the env and spies it changes.
 */
const UNIT = ["test/unit/**/*.test.ts"];

/**
 * The runtime files' forks (NOVALESS_FORKS to measure another count). Three on two cores: most
 * runtime files wait (heartbeats, outages, timers) more than they compute, and with two forks the
 * in-process run used about one core (413 s; three: 285-317 s, 2026-12-07). `npm run
 * test:in-process` asks for four (273 s against 316 with three, 2026-12-08); the external run
 * keeps three, beside tempest. As many kept as at
 * most: a pool allowed to shrink (minForks below maxForks) terminated a worker with a file's task
 * still pending ("Terminating worker thread").
 */
const FORKS = Number(process.env.NOVALESS_FORKS ?? 3);

/**
 * Runtime files that need a module graph of their own: a vi.mock of a handler (the shared graph
 * may hold the real one already), or spies and env that a module reads once at import.
 */
const ISOLATED = [
  "test/e2e/state-size.test.ts",
  "test/e2e/metrics.test.ts",
  "test/e2e/scheduling.test.ts",
  "test/integration/auth-secret.test.ts",
  "test/integration/identity-keystone.test.ts",
  "test/integration/sfn-server.test.ts",
  "test/integration/emulators.test.ts",
];

export default defineConfig({
  test: {
    globalSetup: ["test/global-setup.ts"],
    sequence: { sequencer: LongestFirst },
    testTimeout: 150_000,
    hookTimeout: 120_000,
    // Errors only: the fault tests provoke warnings by the hundred on purpose; a failing
    // assertion says what went wrong.
    // The SDK's Node 20 notice is known (this machine has Node 20; Lambda runs 22).
    // DEBUG_LOG_LEVEL=info shows the components' logs when a test needs explaining.
    env: {
      NOVALESS_LOG_LEVEL: process.env.DEBUG_LOG_LEVEL ?? "error",
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
    // Two cores, so few workers (each pool's own limit; the two pools run side by side).
    poolOptions: {
      threads: { maxThreads: 1, minThreads: 1 },
      // The forks pool's workers are shared by its projects: only this root setting makes them
      // keep their module graph from file to file (a project's own `isolate` does not).
      forks: { maxForks: FORKS, minForks: FORKS, isolate: false },
    },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: UNIT,
          pool: "threads",
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "runtime",
          include: qemuOnly ? REAL_QEMU_SUITES : ["test/**/*.test.ts"],
          exclude: [
            ...configDefaults.exclude,
            ...UNIT,
            ...ISOLATED,
            ...(inProcessOnly ? [...leftToExternal(files), ...REAL_QEMU_SUITES] : []),
          ],
          // Emulator-backed suites start their own runtimes; each runtime sets the process's env
          // and the SDK's request handler and stops them with itself, so the files of one fork
          // share its module graph (lib/, the SDK and the emulators imported once per fork, not
          // once per file: a third of the run's CPU).
          pool: "forks",
        },
      },
      {
        extends: true,
        test: {
          name: "runtime-isolated",
          include: ISOLATED,
          exclude: [...configDefaults.exclude, ...(inProcessOnly ? leftToExternal(files) : [])],
          // A worker thread of their own for each of these files, in the threads pool beside the
          // unit files: the forks pool runs one project's files at a time (its files all finished
          // before the next project's start), so these would have run after every other file.
          pool: "threads",
          isolate: true,
        },
      },
    ],
  },
});
