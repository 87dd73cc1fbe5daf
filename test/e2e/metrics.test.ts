// The metrics an operator alarms on, emitted by the real flow on the local runtime: a build that
// goes ACTIVE, and one that goes to ERROR with NoValidHost while its conductor execution and
// every function invocation succeed (a full fleet is no function error: no Errors alarm fires).
import { ListExecutionsCommand } from "@aws-sdk/client-sfn";
import { SendMessageCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sfnClient, sqsClient } from "../../lib/aws/clients.js";
import { METRIC } from "../../lib/metrics.js";
import { type InvocationRecord, observeInvocations } from "../../local/lambda.js";
import type { Runtime } from "../../local/runtime.js";
import { ADMIN, type Client, eventually, registeredHost, startTestRuntime } from "./harness.js";

interface Emf {
  _aws: { CloudWatchMetrics: { Namespace: string; Metrics: { Name: string }[] }[] };
  [key: string]: unknown;
}

let runtime: Runtime;
let client: Client;
const emf: Emf[] = [];
const saved = process.env.POWERTOOLS_METRICS_DISABLED;

beforeAll(async () => {
  process.env.POWERTOOLS_METRICS_DISABLED = "false";
  const write = process.stdout.write.bind(process.stdout);
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    for (const line of String(chunk).split("\n")) {
      if (line.startsWith('{"_aws"')) emf.push(JSON.parse(line) as Emf);
      else if (line) write(`${line}\n`);
    }
    return true;
  });
  ({ runtime, client } = await startTestRuntime({ hosts: 2, buildMs: 20, heartbeatSeconds: 1 }));
});
afterAll(async () => {
  await runtime?.stop();
  vi.restoreAllMocks();
  if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
  else process.env.POWERTOOLS_METRICS_DISABLED = saved;
});

/** The data points published so far for one metric, with their dimensions. */
function points(name: string): Record<string, unknown>[] {
  return emf
    .filter((l) => l._aws.CloudWatchMetrics[0]!.Metrics.some((m) => m.Name === name))
    .map((l) => ({ value: l[name], service: l.service, reason: l.reason }));
}

describe("metrics from the local flow", () => {
  it("counts what a host parked in its DLQ, as its heartbeats report it (the ComputeDeadLetters alarm's source)", async () => {
    const queueUrl = (await registeredHost("host-1")).queue_url;
    await sqsClient().send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "{not a cast" }));
    const parked = await eventually(
      async () => points(METRIC.computeDeadLetters),
      (p) => p.length > 0,
    );
    expect(parked[0]).toMatchObject({ value: 1 });
  });

  it("counts a build started and ACTIVE, and times the scheduler's decision and fleet read", async () => {
    const id = await client.createServer({ name: "counted", flavorRef: "1" });
    expect((await client.waitForStatus(id, ["ACTIVE", "ERROR"])).status).toBe("ACTIVE");
    expect(points(METRIC.buildsStarted)).toEqual([expect.objectContaining({ value: 1 })]);
    const active = await eventually(
      async () => points(METRIC.buildsActive),
      (p) => p.length > 0,
    );
    expect(active).toEqual([expect.objectContaining({ value: 1 })]);
    for (const name of [METRIC.schedulerDecisionTime, METRIC.schedulerFleetReadTime]) {
      expect(points(name).length).toBeGreaterThan(0);
      for (const p of points(name)) expect(p.value).toBeGreaterThanOrEqual(0);
    }
    expect(points(METRIC.buildsError)).toEqual([]);
    for (const l of emf) expect(l._aws.CloudWatchMetrics[0]!.Namespace).toBe("novaless");
  });

  it("counts a NoValidHost build in BuildsError although its conductor execution and the scheduler's invocation SUCCEEDED", async () => {
    const admin = client.as(ADMIN);
    const f = await admin.post("/v2.1/flavors", {
      flavor: { name: "m1.colossal", ram: 524288, vcpus: 2, disk: 1 },
    });
    expect(f.status).toBe(200);
    const invocations: InvocationRecord[] = [];
    const stop = observeInvocations((r) => invocations.push(r));
    const id = await client.createServer({ name: "too-big", flavorRef: f.body.flavor.id });
    const server = await client.waitForStatus(id, ["ACTIVE", "ERROR"]);
    expect(server.status).toBe("ERROR");
    expect(server.fault.message).toBe("No valid host was found. There are not enough hosts available.");
    // select_destinations answered NoValidHost, and the conductor recorded it: both succeeded
    // (an invocation is recorded once it has settled, maybe after the server shows ERROR)
    const steps = await eventually(
      async () => invocations.filter((r) => ["novaless-scheduler", "novaless-conductor"].includes(r.name)),
      (l) => l.length >= 2,
    );
    stop();
    expect(steps.map((r) => r.name).sort()).toEqual(["novaless-conductor", "novaless-scheduler"]);
    expect(steps.every((r) => r.ok)).toBe(true);
    const errors = await eventually(
      async () => points(METRIC.buildsError),
      (p) => p.length > 0,
    );
    expect(errors).toEqual([{ value: 1, service: "novaless", reason: "NoValidHost" }]);
    const executions = await eventually(
      async () =>
        (
          await sfnClient().send(
            new ListExecutionsCommand({ stateMachineArn: process.env.NOVALESS_CONDUCTOR_ARN! }),
          )
        ).executions ?? [],
      (list) => list.length === 2 && list.every((e) => e.status !== "RUNNING"),
    );
    expect(executions.map((e) => e.status)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
  });
});
