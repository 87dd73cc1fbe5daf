// The local runtime with its functions and dynalite in worker threads of their own (`threads`, as
// `npm start`, bench:e2e and tempest run it): builds and their reschedules go ACTIVE, the
// functions' SDK calls leave their thread (this thread's clients make none of them) and are held
// to IAM by the gateway here, and a function's error crosses the thread with its name.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { meterReading, startMeter, stopMeter } from "../../lib/aws/meter.js";
import { accessKeyIdOf } from "../../local/iam/identities.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

describe("threads, the stack's policies as they are", () => {
  let runtime: Runtime;
  let client: Client;
  beforeAll(async () => {
    ({ runtime, client } = await startTestRuntime({
      threads: true,
      hosts: 3,
      failHosts: ["host-1"],
      buildMs: 50,
    }));
  });
  afterAll(async () => runtime?.stop());

  it("builds go ACTIVE, a failed attempt rescheduled, and no function's call is made in this thread", async () => {
    startMeter();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await client.createServer({ name: `t${i}` }));
      const admin = client.as(ADMIN);
      for (const id of ids) {
        const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
        expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
        expect(s["OS-EXT-SRV-ATTR:host"]).not.toBe("host-1");
      }
      // This thread's SDK clients: the hosts', the state machine's and build-intake's event source
      // (Lambda's pollers, with the function's role: receives and deletes), never a function's own
      // call (build-intake's StartExecution is made in the functions' thread).
      const reading = meterReading();
      expect(Object.keys(reading).length).toBeGreaterThan(0);
      for (const fn of ["api", "scheduler", "conductor", "compute-events"] as const)
        expect(Object.keys(reading)).not.toContain(accessKeyIdOf(fn));
      const pollers = reading[accessKeyIdOf("build-intake")]?.requests ?? {};
      expect(pollers["sqs:ReceiveMessage"]).toBeGreaterThan(0);
      expect(Object.keys(pollers).sort()).toEqual(["sqs:DeleteMessageBatch", "sqs:ReceiveMessage"]);
      for (const id of ids) expect((await client.delete(`/v2.1/servers/${id}`)).status).toBe(204);
      expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
    } finally {
      stopMeter();
    }
  });

  it("the watchdog's run answers its actions across the thread", async () => {
    expect(Array.isArray(await runtime.runWatchdog())).toBe(true);
  });
});

describe("threads, without the scheduler's read of the Catalog", () => {
  let runtime: Runtime;
  let client: Client;
  beforeAll(async () => {
    ({ runtime, client } = await startTestRuntime({
      threads: true,
      hosts: 2,
      retryIntervalMs: 10,
      iam: {
        removeStatement: (c, s) =>
          c === "scheduler" && (s.Resource ?? []).some((r) => r.includes(":table/novaless-catalog")),
      },
    }));
  });
  afterAll(async () => runtime?.stop());

  it("the gateway refuses the scheduler's read, and its error reaches the fault by name", async () => {
    const id = await client.createServer({ name: "no-catalog" });
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ERROR");
    const admin = await client.as(ADMIN).get(`/v2.1/servers/${id}`);
    const fault = JSON.stringify(admin.body.server.fault);
    expect(fault).toContain("AccessDeniedException");
    expect(fault).toContain("assumed-role/novaless-scheduler/novaless-scheduler");
  });
});
