// The failure loop: builds that fail on a host come back through build-requests (compute-events
// sends the request again, counted here at the SQS endpoint) and land on the alternates.
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, leakedClaims, startTestRuntime } from "./harness.js";

let runtime: Runtime;
let client: Client;
/** the build requests SQS accepted on build-requests: their attempt numbers */
const requests: number[] = [];

beforeAll(async () => {
  ({ runtime, client } = await startTestRuntime({ hosts: 3, failHosts: ["host-1", "host-2"], buildMs: 50 }));
  const name = process.env.NOVALESS_BUILD_REQUESTS_QUEUE_URL!.split("/").pop()!;
  runtime.emulators.gateway!.onMessageSent((m) => {
    if (m.queueUrl.split("/").pop() === name)
      requests.push((JSON.parse(m.body) as { retry: { num_attempts: number } }).retry.num_attempts);
  });
});
afterAll(async () => runtime?.stop());

it("three servers with host-1 and host-2 failing every build: all ACTIVE on host-3", async () => {
  const admin = client.as(ADMIN);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await client.createServer({ name: `s${i}` }));
  let failedAttempts = 0;
  for (const id of ids) {
    const s = await admin.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(s.status, JSON.stringify(s.fault)).toBe("ACTIVE");
    expect(s["OS-EXT-SRV-ATTR:host"]).toBe("host-3");

    const actions = await admin.get(`/v2.1/servers/${id}/os-instance-actions`);
    const rid = actions.body.instanceActions[0].request_id;
    const detail = await admin.get(`/v2.1/servers/${id}/os-instance-actions/${rid}`);
    const builds = (
      detail.body.instanceAction.events as { event: string; result: string; host: string }[]
    ).filter((e) => e.event === "compute_build_and_run_instance");
    // Every failed attempt is visible, on a failing host, and the last one succeeded on host-3.
    expect(builds.at(-1)).toMatchObject({ result: "Success", host: "host-3" });
    for (const b of builds.slice(0, -1)) {
      expect(b.result).toBe("Error");
      expect(["host-1", "host-2"]).toContain(b.host);
    }
    failedAttempts += builds.length - 1;
  }
  // host-1 and host-2 weigh best while empty, so the failure loop was really exercised: each
  // failed attempt came back as one more message on build-requests, after the creates' three
  expect(failedAttempts).toBeGreaterThan(0);
  expect(requests.filter((n) => n === 1)).toHaveLength(3);
  expect(requests.filter((n) => n > 1)).toHaveLength(failedAttempts);
  for (const id of ids) await client.delete(`/v2.1/servers/${id}`);
  expect(await eventually(leakedClaims, (l) => l.length === 0)).toEqual([]);
});
