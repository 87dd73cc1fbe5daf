// An outage of compute-events is not a dead fleet (issue 35), on the fake driver's simulated
// hosts: the scenario of report-outage-scenario.ts (an outage, a host restarted in it, the
// watchdog holding, every build ACTIVE after; then a real death still caught). Also the local
// fault switches over HTTP: POST /local/faults/compute-events and POST /local/hosts/{host}/restart.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FunctionUrlError, postToFunctionUrl } from "../../lib/aws/function-url.js";
import { runAs } from "../../lib/aws/identity.js";
import { getServiceHeartbeat } from "../../lib/placement/liveness.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, startTestRuntime } from "./harness.js";
import { OUTAGE_SECONDS, outageRuntimeOptions, outageScenario } from "./report-outage-scenario.js";

let runtime: Runtime;
let client: Client;
let admin: Client;

beforeAll(async () => {
  // builds take 5 s, so that some are in flight on their host when the outage begins
  ({ runtime, client } = await startTestRuntime(outageRuntimeOptions({ buildMs: 5000 })));
  admin = client.as(ADMIN);
});
afterAll(async () => runtime?.stop());

describe("the local fault switches", () => {
  it("POST /local/faults/compute-events: admin only, a validated body, 503s at the URL until it ends", async () => {
    const path = "/local/faults/compute-events";
    expect((await client.as(undefined).post(path, { refuse_seconds: 5 })).status).toBe(401);
    const member = await client.post(path, { refuse_seconds: 5 });
    expect(member.status).toBe(403);
    expect(member.body).toEqual({
      forbidden: { code: 403, message: "Only an admin may inject a local fault." },
    });
    for (const bad of [
      {},
      { refuse_seconds: -1 },
      { refuse_seconds: 1.5 },
      { refuse_seconds: "5" },
      { refuse_seconds: 5, x: 1 },
    ]) {
      const r = await admin.post(path, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.badRequest).toMatchObject({ code: 400, message: expect.any(String) });
    }
    const notJson = await admin.call("POST", path, undefined, "{refuse");
    expect(notJson.status).toBe(400);
    expect(notJson.body.badRequest).toMatchObject({ code: 400 });

    const url = process.env.NOVALESS_COMPUTE_EVENTS_URL!;
    // a host's signed POST, as an agent sends a report (refused before the function reads it)
    const post = () =>
      runAs(runtime.hostCredentials("host-1"), () =>
        postToFunctionUrl(url, JSON.stringify({ kind: "nothing" }), { maxAttempts: 1 }),
      ).then(
        () => 200,
        (e: unknown) => (e instanceof FunctionUrlError ? e.status : Promise.reject(e)),
      );
    const on = await admin.post(path, { refuse_seconds: 600 });
    expect(on.status).toBe(202);
    expect(on.body).toEqual({ fault: "compute-events", refuse_seconds: 600 });
    expect(await post()).toBe(503);
    expect((await admin.post(path, { refuse_seconds: 0 })).status).toBe(202);
    // served again: the function answers (400, dead-lettered: not a report)
    expect(await post()).toBe(400);
    const ended = new Date().toISOString();
    const beat = await eventually(
      () => getServiceHeartbeat("host-2"),
      (s) => (s?.last_heartbeat ?? "") > ended,
    );
    expect(beat!.last_heartbeat > ended).toBe(true);
  });

  it("POST /local/hosts/{host}/restart: admin only, 404 for an unknown host, a new agent for a known one", async () => {
    expect((await client.as(undefined).post("/local/hosts/host-6/restart", {})).status).toBe(401);
    expect((await client.post("/local/hosts/host-6/restart", {})).status).toBe(403);
    const unknown = await admin.post("/local/hosts/host-99/restart", {});
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      itemNotFound: { code: 404, message: "Compute host host-99 could not be found." },
    });
    const before = runtime.hosts.get("host-6")!.agent;
    const r = await admin.post("/local/hosts/host-6/restart", {});
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ host: "host-6", action: "restart" });
    expect(runtime.hosts.get("host-6")!.agent).not.toBe(before);
    // the new agent reports: the host is up and takes builds
    const at = new Date().toISOString();
    const s = await eventually(
      () => getServiceHeartbeat("host-6"),
      (h) => (h?.last_heartbeat ?? "") > at,
    );
    expect(s!.last_heartbeat > at).toBe(true);
  });
});

describe(`an outage of compute-events (${OUTAGE_SECONDS} s), simulated hosts`, () => {
  outageScenario({ runtime: () => runtime, client: () => client, waitForSpawning: true });
});
