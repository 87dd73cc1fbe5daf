// An outage of compute-events is not a dead fleet (issue 35), on the exec driver: each host a
// long-polling agent (as novaless-compute runs) with its report spool on disk, each server a real
// process. The scenario of report-outage-scenario.ts: an outage, a host's agent restarted in it,
// the watchdog holding, every build ACTIVE after; then a real death still caught and evacuated.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { type Client, startTestRuntime } from "./harness.js";
import { OUTAGE_SECONDS, outageRuntimeOptions, outageScenario } from "./report-outage-scenario.js";

const instances = mkdtempSync(join(tmpdir(), "novaless-e2e-outage-exec-"));
let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime(
    outageRuntimeOptions({ driver: "exec", instancesPath: instances, transport: "long-poll" }),
  ));
});
afterAll(async () => {
  await runtime?.stop();
  rmSync(instances, { recursive: true, force: true });
});

describe(`an outage of compute-events (${OUTAGE_SECONDS} s), exec hosts`, () => {
  // an exec build is a process started in a fraction of a second: the outage begins as soon as
  // the builds are accepted, so that they are still on their way
  outageScenario({
    runtime: () => runtime,
    client: () => client,
    server: { imageRef: "sleeper" },
    waitForSpawning: false,
  });
});
